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
		n              int
		next, bytesOut int64
	}{
		{"none", nil, 7, 1000, 100, 0, 7, 0},
		{"all old", three, 0, 1000, 100, 3, 30, 30},
		{"lag stops at the first young batch", three, 0, 150, 100, 1, 10, 10},
		{"appended exactly at the cutoff is old", three, 0, 200, 100, 2, 20, 20},
		{"nothing old yet", three, 0, 99, 100, 0, 0, 0},
		{"budget cuts", three, 0, 1000, 25, 2, 20, 20},
		{"one batch over budget still moves", three, 0, 1000, 5, 1, 10, 10},
		{"zero budget takes nothing", three, 0, 1000, 0, 0, 0, 0},
		{"start inside the first batch", three, 4, 1000, 100, 3, 30, 30},
		{"young batch after an old one past the gap", []metadata.BatchRef{b(25, 29, 100, 10), b(30, 31, 900, 10)}, 20, 500, 100, 1, 30, 10},
	} {
		n, next, bytes := icebergTake(tc.batches, tc.start, tc.cutoff, tc.budget)
		if n != tc.n || next != tc.next || bytes != tc.bytesOut {
			t.Errorf("%s: icebergTake = %d, %d, %d; want %d, %d, %d", tc.name, n, next, bytes, tc.n, tc.next, tc.bytesOut)
		}
	}
}
