package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/kbatch"
)

// Scan reads rows of topic's table, at most limit (all when limit <= 0),
// in the order of its data files: a tool's look at the table without a
// query engine, and the tests' reader.
func (w *Writer) Scan(ctx context.Context, topic string, limit int64) ([]Row, error) {
	tbl, err := w.Load(ctx, topic)
	if err != nil {
		return nil, err
	}
	return ScanTable(ctx, tbl, limit)
}

// ScanTable reads the rows of tbl, a table of floe's layout, at most
// limit (all when limit <= 0).
func ScanTable(ctx context.Context, tbl *table.Table, limit int64) ([]Row, error) {
	var opts []table.ScanOption
	if limit > 0 {
		opts = append(opts, table.WithLimit(limit))
	}
	scan := tbl.Scan(opts...)
	defer scan.Close()
	_, batches, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg: scan %v: %w", tbl.Identifier(), err)
	}
	var rows []Row
	for rec, err := range batches {
		if err != nil {
			return nil, fmt.Errorf("iceberg: scan %v: %w", tbl.Identifier(), err)
		}
		rows, err = appendRows(rows, rec)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("iceberg: scan %v: %w", tbl.Identifier(), err)
		}
	}
	return rows, nil
}

// Arrow array types a scan may return for the layout's columns (plain or
// large variants).
type (
	bytesArray interface {
		arrow.Array
		Value(int) []byte
	}
	stringArray interface {
		arrow.Array
		Value(int) string
	}
)

// appendRows converts rec, a batch of the table's columns, to rows.
func appendRows(rows []Row, rec arrow.RecordBatch) (_ []Row, err error) {
	defer func() {
		// A type assertion below fails on a batch of another shape.
		if r := recover(); r != nil {
			err = fmt.Errorf("batch does not have floe's layout: %v", r)
		}
	}()
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			panic(fmt.Sprintf("no column %q", name))
		}
		return rec.Column(idx[0])
	}
	part := col(ColPartition).(*array.Int32)
	off := col(ColOffset).(*array.Int64)
	ts := col(ColTimestamp).(*array.Timestamp)
	at := col(ColAppendTime).(*array.Timestamp)
	key := col(ColKey).(bytesArray)
	val := col(ColValue).(bytesArray)
	hdrs := col(ColHeaders).(array.ListLike)
	hdr := hdrs.ListValues().(*array.Struct)
	hk := hdr.Field(0).(stringArray)
	hv := hdr.Field(1).(bytesArray)
	tsUnit := ts.DataType().(*arrow.TimestampType).Unit
	atUnit := at.DataType().(*arrow.TimestampType).Unit
	bytesAt := func(a bytesArray, i int) []byte {
		if a.IsNull(i) {
			return nil
		}
		return append([]byte{}, a.Value(i)...)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		r := Row{
			Partition:  part.Value(i),
			Offset:     off.Value(i),
			Timestamp:  ts.Value(i).ToTime(tsUnit).UTC(),
			AppendTime: at.Value(i).ToTime(atUnit).UTC(),
			Key:        bytesAt(key, i),
			Value:      bytesAt(val, i),
		}
		if !hdrs.IsNull(i) {
			start, end := hdrs.ValueOffsets(i)
			for j := int(start); j < int(end); j++ {
				r.Headers = append(r.Headers, kbatch.Header{Key: hk.Value(j), Value: bytesAt(hv, j)})
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// ScanFiles reads tbl's rows per data file, keyed by file path, in the
// files' order: how the rows were laid out, for tools and tests.
func ScanFiles(ctx context.Context, tbl *table.Table) (map[string][]Row, error) {
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg: plan scan of %v: %w", tbl.Identifier(), err)
	}
	out := make(map[string][]Row, len(tasks))
	for _, task := range tasks {
		_, batches, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			return nil, fmt.Errorf("iceberg: read %s: %w", task.File.FilePath(), err)
		}
		var rows []Row
		for rec, err := range batches {
			if err != nil {
				return nil, fmt.Errorf("iceberg: read %s: %w", task.File.FilePath(), err)
			}
			rows, err = appendRows(rows, rec)
			rec.Release()
			if err != nil {
				return nil, fmt.Errorf("iceberg: read %s: %w", task.File.FilePath(), err)
			}
		}
		out[task.File.FilePath()] = rows
	}
	return out, nil
}
