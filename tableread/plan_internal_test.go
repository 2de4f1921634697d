package tableread

import "testing"

func TestMayHold(t *testing.T) {
	file := fileBounds{plo: 2, phi: 5, flo: 100, fhi: 199, parts: true, offs: true}
	cases := []struct {
		name string
		f    fileBounds
		s    scanBounds
		want bool
	}{
		{"inside", file, scanBounds{part: 3, lo: 120, hi: 130}, true},
		{"covers the file", file, scanBounds{part: 2, lo: 0, hi: 1000}, true},
		{"ends at the file's first offset", file, scanBounds{part: 3, lo: 0, hi: 100}, false},
		{"reaches its first offset", file, scanBounds{part: 3, lo: 0, hi: 101}, true},
		{"starts at its last offset", file, scanBounds{part: 3, lo: 199, hi: 300}, true},
		{"starts past its last offset", file, scanBounds{part: 3, lo: 200, hi: 300}, false},
		{"partition below", file, scanBounds{part: 1, lo: 120, hi: 130}, false},
		{"partition above", file, scanBounds{part: 6, lo: 120, hi: 130}, false},
		{"its last partition", file, scanBounds{part: 5, lo: 120, hi: 130}, true},
		{"any partition", file, scanBounds{part: 9, anyPart: true, lo: 120, hi: 130}, true},
		{"any partition, offsets past", file, scanBounds{anyPart: true, lo: 200, hi: 300}, false},
		{"empty scan", file, scanBounds{part: 3, lo: 150, hi: 150}, false},
		{"no offset bounds", fileBounds{plo: 2, phi: 5, parts: true}, scanBounds{part: 3, lo: 900, hi: 901}, true},
		{"no partition bounds", fileBounds{flo: 100, fhi: 199, offs: true}, scanBounds{part: 90, lo: 150, hi: 151}, true},
		{"no bounds, no partition known", fileBounds{}, scanBounds{part: -1, lo: 0, hi: 1}, true},
	}
	for _, c := range cases {
		if got := mayHold(c.f, c.s); got != c.want {
			t.Errorf("%s: mayHold(%+v, %+v) = %v, want %v", c.name, c.f, c.s, got, c.want)
		}
	}
}
