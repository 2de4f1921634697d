package tableread

import "testing"

// TestJudgeEmpty: what a read that found no row below the raw log start
// (end) means, by the snapshot's watermark and whether it is fresh.
func TestJudgeEmpty(t *testing.T) {
	for _, c := range []struct {
		name  string
		wm    int64
		known bool
		end   int64
		fresh bool
		want  emptyRead
	}{
		{"the snapshot holds up to the raw log start: a gap", 507, true, 507, false, emptyGap},
		{"fresh, holds past it: a gap", 900, true, 507, true, emptyGap},
		{"cached, below the raw log start: stale (the chaos skip)", 481, true, 507, false, emptyStale},
		{"cached, holds nothing of the partition: stale", 0, true, 507, false, emptyStale},
		{"fresh, below the raw log start: lost", 481, true, 507, true, emptyLost},
		{"fresh, one short: lost", 506, true, 507, true, emptyLost},
		{"no watermark, cached: load afresh", 0, false, 507, false, emptyStale},
		{"no watermark, fresh: the table's silence", 0, false, 507, true, emptyGap},
	} {
		if got := judgeEmpty(c.wm, c.known, c.end, c.fresh); got != c.want {
			t.Errorf("%s: judgeEmpty(%d, %v, %d, %v) = %d, want %d", c.name, c.wm, c.known, c.end, c.fresh, got, c.want)
		}
	}
}

// TestArrowRows: a scan's Arrow batches hold about 4 MiB of rows, 64 to
// 8,192 of them.
func TestArrowRows(t *testing.T) {
	for _, c := range []struct{ rowBytes, want int }{{0, 4096}, {1024, 4096}, {100, 8192}, {1 << 20, 64}, {64 << 10, 64}, {512, 8192}, {2048, 2048}} {
		if got := arrowRows(c.rowBytes); got != c.want {
			t.Errorf("arrowRows(%d) = %d, want %d", c.rowBytes, got, c.want)
		}
	}
}
