package tableread

import (
	"errors"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
)

// What a read that finds no row means. The caller asks for a partition's
// offsets in [from, end), end its raw log start. Retention moves a raw
// log start only over offsets the table holds (its watermark, as the
// compactor loaded it: metadata.Retention.Raw), and the table's
// watermark moves in the commit that adds the rows (iceberg.Writer), so
// a snapshot whose watermark for the partition is below end predates the
// one retention saw: its silence there says nothing. A snapshot at or
// above end holds every row there is below end, and none in the window
// is a real gap (compacted away, expired by the table's retention): the
// caller reads the raw log from end. A table loaded afresh whose
// watermark is still below end does not hold offsets the raw log no
// longer has: that is data lost, said so, never skipped.

// emptyRead is the meaning of a read that found no row.
type emptyRead int

const (
	// emptyGap: the table holds no row in the window; the caller goes on
	// from end.
	emptyGap emptyRead = iota
	// emptyStale: the snapshot may predate the raw log start; load the
	// table afresh and read again.
	emptyStale
	// emptyLost: the table, loaded afresh, does not hold offsets below
	// the raw log start: ErrDataLoss.
	emptyLost
)

// judgeEmpty is what no row of a partition in [from, end) at a snapshot
// means: wm is the table's watermark for the partition at that snapshot
// (known false: the table carries none that parses, so it cannot say),
// fresh that the snapshot was loaded for this read.
func judgeEmpty(wm int64, known bool, end int64, fresh bool) emptyRead {
	switch {
	case known && wm >= end:
		return emptyGap
	case !fresh:
		return emptyStale
	case !known:
		return emptyGap // not floe's watermark: the table's silence is all there is
	default:
		return emptyLost
	}
}

// errStale: a read's snapshot may predate the raw log start (emptyStale);
// retried loads the table afresh.
var errStale = errors.New("tableread: the table's snapshot predates the raw log start")

// tableWatermark is tbl's watermark (iceberg.PropWatermark, set in the
// commit of each append); known false when it has none that parses.
func tableWatermark(tbl *table.Table) (wm iceberg.Watermark, known bool) {
	s, ok := tbl.Properties()[iceberg.PropWatermark]
	if !ok {
		return nil, false
	}
	wm, err := iceberg.ParseWatermark(s)
	return wm, err == nil
}

// speaksUpTo is how far a snapshot at watermark wm (known) speaks for
// partition p of a window ending at end: every row of p below it is in
// the snapshot.
func speaksUpTo(wm iceberg.Watermark, known bool, p int32, end int64) int64 {
	if !known {
		return end
	}
	return min(end, wm[p])
}
