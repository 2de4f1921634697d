package agent

import (
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func bref(file string, base, last, off, n, size int64) metadata.BatchRef {
	return metadata.BatchRef{FileKey: file, BaseOffset: base, LastOffset: last, ByteOffset: off, ByteLength: n, FileSize: size}
}

func TestWholeFile(t *testing.T) {
	refs := []metadata.BatchRef{bref("a", 0, 9, 0, 400, 1000), bref("a", 10, 19, 500, 100, 1000), bref("b", 0, 0, 0, 10, 1<<30)}
	for _, tc := range []struct {
		name     string
		idx      []int
		cacheMax int64
		cacheOn  bool
		readers  int
		want     bool
	}{
		{"tail read of a small file", []int{1}, 2000, true, 0, true},
		{"no cache", []int{0, 1}, 2000, false, 0, false},
		{"file over the cached size", []int{2}, 2000, true, 0, false},
		{"one catch-up reader of a tenth", []int{1}, 2000, true, 1, false},
		{"one catch-up reader of half", []int{0, 1}, 2000, true, 1, true},
		{"one catch-up reader of 40%", []int{0}, 2000, true, 1, true},
		{"three catch-up readers of a tenth each", []int{1}, 2000, true, 3, true},
		{"two catch-up readers of a tenth each", []int{1}, 2000, true, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wholeFile(refs, tc.idx, tc.cacheMax, tc.cacheOn, tc.readers); got != tc.want {
				t.Errorf("wholeFile = %v, want %v", got, tc.want)
			}
		})
	}
}
