package iceberg

import (
	"context"
	"strconv"
	"time"
)

// TableState is what a topic's table holds, from its current snapshot's
// summary and its properties: for floe topic describe, metrics and
// floe table describe.
type TableState struct {
	Exists bool   // false: no table yet (the rest is zero)
	Name   string // namespace.table
	// Location is the table's root in the warehouse.
	Location string
	// SnapshotID and SnapshotTime are the current snapshot's (0 and the
	// zero time before the first append).
	SnapshotID   int64
	SnapshotTime time.Time
	// Rows, DataFiles and Bytes are the table's totals.
	Rows, DataFiles, Bytes int64
	// Watermark is the next offset per partition the table does not hold.
	Watermark Watermark
}

// Describe returns the state of topic's table.
func (w *Writer) Describe(ctx context.Context, topic string) (TableState, error) {
	return w.describe(ctx, topic, mainTable)
}

// describe is Describe of topic's table of kind k.
func (w *Writer) describe(ctx context.Context, topic string, k tableKind) (TableState, error) {
	tbl, err := w.load(ctx, topic, k)
	if missing(err) {
		return TableState{Watermark: Watermark{}}, nil
	}
	if err != nil {
		return TableState{}, err
	}
	wm, err := tableWatermark(tbl)
	if err != nil {
		return TableState{}, err
	}
	st := TableState{Exists: true, Name: w.opts.Namespace + "." + w.identifier(topic, k)[1],
		Location: tbl.Location(), Watermark: wm}
	if snap := tbl.CurrentSnapshot(); snap != nil {
		st.SnapshotID = snap.SnapshotID
		st.SnapshotTime = time.UnixMilli(snap.TimestampMs).UTC()
		if snap.Summary != nil {
			num := func(key string) int64 {
				n, _ := strconv.ParseInt(snap.Summary.Properties[key], 10, 64)
				return n
			}
			st.Rows, st.DataFiles, st.Bytes = num("total-records"), num("total-data-files"), num("total-files-size")
		}
	}
	return st, nil
}

// Lag returns how far the table at w trails a log whose high watermarks
// (next offsets) are high: per partition, and in all. Partitions where
// the table is at or past the log count 0.
func (w Watermark) Lag(high Watermark) (perPartition map[int32]int64, total int64) {
	perPartition = make(map[int32]int64, len(high))
	for p, next := range high {
		d := max(next-w[p], 0)
		perPartition[p] = d
		total += d
	}
	return perPartition, total
}
