package readpath

import (
	"fmt"
	"math"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func bref(file string, base, last, off, n, size int64) metadata.BatchRef {
	return metadata.BatchRef{FileKey: file, BaseOffset: base, LastOffset: last, ByteOffset: off, ByteLength: n, FileSize: size}
}

func TestBehindBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		refs []metadata.BatchRef
		hw   int64
		want int64
	}{
		{"none", nil, 100, 0},
		{"at the head", []metadata.BatchRef{bref("a", 0, 9, 0, 1000, 0)}, 10, 0},
		{"ten offsets of 100 bytes behind", []metadata.BatchRef{bref("a", 0, 9, 0, 1000, 0)}, 20, 1000},
		{"density over several refs", []metadata.BatchRef{bref("a", 0, 9, 0, 1000, 0), bref("b", 10, 19, 0, 3000, 0)}, 120, 20000},
		{"compacted: offsets without bytes", []metadata.BatchRef{bref("a", 0, 99, 0, 1000, 0)}, 1100, 10000},
		{"high watermark behind the refs", []metadata.BatchRef{bref("a", 0, 9, 0, 1000, 0)}, 5, 0},
		{"huge lag does not overflow", []metadata.BatchRef{bref("a", 0, 0, 0, 1<<30, 0)}, 1 << 40, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := behindBytes(tc.refs, tc.hw); got != tc.want {
				t.Errorf("behindBytes = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPlanSegments(t *testing.T) {
	seg := func(s *raSeg) string { return fmt.Sprintf("%s[%d+%d]%d-%d", s.key, s.off, s.n, s.first, s.last) }
	for _, tc := range []struct {
		name string
		refs []metadata.BatchRef
		want []string
	}{
		{"one run", []metadata.BatchRef{bref("a", 0, 9, 100, 50, 0)}, []string{"a[100+50]0-9"}},
		{"adjacent batches of one file merge", []metadata.BatchRef{bref("a", 0, 9, 100, 50, 0), bref("a", 10, 19, 150, 50, 0)}, []string{"a[100+100]0-19"}},
		{"a small gap is read through", []metadata.BatchRef{bref("a", 0, 9, 100, 50, 0), bref("a", 10, 19, 160, 40, 0)}, []string{"a[100+100]0-19"}},
		{"a large gap splits", []metadata.BatchRef{bref("a", 0, 9, 0, 50, 0), bref("a", 10, 19, 1000, 50, 0)}, []string{"a[0+50]0-9", "a[1000+50]10-19"}},
		{"files split", []metadata.BatchRef{bref("a", 0, 9, 0, 50, 0), bref("b", 10, 19, 50, 50, 0)}, []string{"a[0+50]0-9", "b[50+50]10-19"}},
		{"an earlier range of one file splits", []metadata.BatchRef{bref("a", 0, 9, 500, 50, 0), bref("a", 10, 19, 0, 50, 0)}, []string{"a[500+50]0-9", "a[0+50]10-19"}},
		{"segments end at segMax", []metadata.BatchRef{bref("a", 0, 9, 0, 60, 0), bref("a", 10, 19, 60, 60, 0), bref("a", 20, 29, 120, 60, 0)}, []string{"a[0+120]0-19", "a[120+60]20-29"}},
		{"a batch over segMax gets its own", []metadata.BatchRef{bref("a", 0, 9, 0, 500, 0), bref("a", 10, 19, 500, 10, 0)}, []string{"a[0+500]0-9", "a[500+10]10-19"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range planSegments(tc.refs, 20, 150) {
				got = append(got, seg(s))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("segments %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadaheadWindow(t *testing.T) {
	for _, tc := range []struct {
		maxBytes int
		budget   int64
		want     int64
	}{
		{4 << 20, 64 << 20, 12 << 20},
		{1 << 20, 64 << 20, 4 << 20},
		{8 << 20, 64 << 20, 16 << 20},
		{4 << 20, 8 << 20, 2 << 20},
	} {
		if got := readaheadWindow(tc.maxBytes, tc.budget); got != tc.want {
			t.Errorf("readaheadWindow(%d, %d) = %d, want %d", tc.maxBytes, tc.budget, got, tc.want)
		}
	}
}

func TestDenseFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, size int64
		readers int
		fileMax int64
		want    bool
	}{
		{"one reader of a sixteenth", 1 << 19, 8 << 20, 1, 16 << 20, false},
		{"sixteen readers of a sixteenth each", 1 << 19, 8 << 20, 16, 16 << 20, true},
		{"four readers of a sixteenth: a quarter", 1 << 19, 8 << 20, 4, 16 << 20, true},
		{"three readers of a sixteenth", 1 << 19, 8 << 20, 3, 16 << 20, false},
		{"a file over the cached size", 1 << 19, 32 << 20, 64, 16 << 20, false},
		{"no cache", 1 << 19, 8 << 20, 16, 0, false},
		{"unknown size", 1 << 19, 0, 16, 16 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DenseFile(tc.n, tc.size, tc.readers, tc.fileMax); got != tc.want {
				t.Errorf("DenseFile = %v, want %v", got, tc.want)
			}
		})
	}
}
