package iceberg

import "github.com/apache/arrow-go/v18/arrow"

// AppendRows appends to rows the rows of rec, an Arrow batch of a floe
// table's columns (partition, offset, timestamp, append_time, key,
// value, headers; others are ignored), and returns it: how a reader of
// the table's files (tableread) turns what a scan returns into rows. The
// rows own their bytes. A batch of another shape is an error, never a
// panic.
func AppendRows(rows []Row, rec arrow.RecordBatch) ([]Row, error) { return appendRows(rows, rec) }
