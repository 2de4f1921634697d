package compactor

import (
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func TestIcebergStart(t *testing.T) {
	for _, tc := range []struct{ wm, logStart, want int64 }{
		{0, 0, 0}, {10, 0, 10}, {10, 25, 25}, {30, 25, 30},
	} {
		if got := icebergStart(tc.wm, tc.logStart); got != tc.want {
			t.Errorf("icebergStart(%d, %d) = %d, want %d", tc.wm, tc.logStart, got, tc.want)
		}
	}
}

func TestIcebergTake(t *testing.T) {
	b := func(base, last, appendMs, size int64) metadata.BatchRef {
		return metadata.BatchRef{BaseOffset: base, LastOffset: last, LogAppendTime: appendMs, ByteLength: size}
	}
	three := []metadata.BatchRef{b(0, 9, 100, 10), b(10, 19, 200, 10), b(25, 29, 300, 10)} // a compacted gap 20..24
	for _, tc := range []struct {
		name           string
		batches        []metadata.BatchRef
		start, cutoff  int64
		budget         int64
		first          bool
		n              int
		next, bytesOut int64
		cut            bool
	}{
		{"none", nil, 7, 1000, 100, true, 0, 7, 0, false},
		{"all old", three, 0, 1000, 100, true, 3, 30, 30, false},
		{"lag stops at the first young batch", three, 0, 150, 100, true, 1, 10, 10, false},
		{"appended exactly at the cutoff is old", three, 0, 200, 100, true, 2, 20, 20, false},
		{"nothing old yet", three, 0, 99, 100, true, 0, 0, 0, false},
		{"budget cuts", three, 0, 1000, 25, true, 2, 20, 20, true},
		{"one batch over budget moves first in the pass", three, 0, 1000, 5, true, 1, 10, 10, true},
		{"one batch over budget waits after others", three, 0, 1000, 5, false, 0, 0, 0, true},
		{"a spent budget takes nothing", three, 0, 1000, 0, false, 0, 0, 0, true},
		{"budget exactly fits", three, 0, 1000, 30, false, 3, 30, 30, false},
		{"a young batch is no cut", three, 0, 150, 10, false, 1, 10, 10, false},
		{"start inside the first batch", three, 4, 1000, 100, true, 3, 30, 30, false},
		{"young batch after an old one past the gap", []metadata.BatchRef{b(25, 29, 100, 10), b(30, 31, 900, 10)}, 20, 500, 100, true, 1, 30, 10, false},
	} {
		n, next, bytes, cut := icebergTake(tc.batches, tc.start, tc.cutoff, tc.budget, tc.first)
		if n != tc.n || next != tc.next || bytes != tc.bytesOut || cut != tc.cut {
			t.Errorf("%s: icebergTake = %d, %d, %d, %v; want %d, %d, %d, %v", tc.name, n, next, bytes, cut, tc.n, tc.next, tc.bytesOut, tc.cut)
		}
	}
}
