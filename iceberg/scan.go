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
func appendRows(rows []Row, rec arrow.RecordBatch) ([]Row, error) {
	if len(rec.Schema().FieldIndices(ColAppendTime)) != 1 {
		return rows, fmt.Errorf("batch does not have floe's layout: no column %q", ColAppendTime)
	}
	err := eachRow(rec, func(v *RowView) {
		r := Row{Partition: v.Partition, Offset: v.Offset, Timestamp: v.cols.ts.Value(v.i).ToTime(v.cols.tsUnit).UTC(),
			AppendTime: v.cols.at.Value(v.i).ToTime(v.cols.atUnit).UTC(), Key: clone(v.Key), Value: clone(v.Value)}
		for j := range v.Headers() {
			k, hv := v.Header(j)
			r.Headers = append(r.Headers, kbatch.Header{Key: k, Value: clone(hv)})
		}
		rows = append(rows, r)
	})
	return rows, err
}

// clone copies b, nil staying nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// rowCols are the columns of a batch of floe's layout.
type rowCols struct {
	part           *array.Int32
	off            *array.Int64
	ts, at         *array.Timestamp
	tsUnit, atUnit arrow.TimeUnit
	key, val       bytesArray
	hdrs           array.ListLike
	hk             stringArray
	hv             bytesArray
}

// colsOf finds rec's columns of floe's layout; a batch of another shape
// is an error, never a panic.
func colsOf(rec arrow.RecordBatch) (c rowCols, err error) {
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
	c.part = col(ColPartition).(*array.Int32)
	c.off = col(ColOffset).(*array.Int64)
	c.ts = col(ColTimestamp).(*array.Timestamp)
	if len(rec.Schema().FieldIndices(ColAppendTime)) > 0 { // a reader of records may leave it out (EachRow)
		c.at = col(ColAppendTime).(*array.Timestamp)
		c.atUnit = c.at.DataType().(*arrow.TimestampType).Unit
	}
	c.key = col(ColKey).(bytesArray)
	c.val = col(ColValue).(bytesArray)
	c.hdrs = col(ColHeaders).(array.ListLike)
	hdr := c.hdrs.ListValues().(*array.Struct)
	c.hk = hdr.Field(0).(stringArray)
	c.hv = hdr.Field(1).(bytesArray)
	c.tsUnit = c.ts.DataType().(*arrow.TimestampType).Unit
	return c, nil
}

// RowView is one row of an Arrow batch of a floe table's columns, its
// bytes seen in the batch's buffers: valid until the batch is released,
// and only while fn runs (EachRow reuses it).
type RowView struct {
	Partition  int32
	Offset     int64
	Timestamp  int64  // unix ms
	Key, Value []byte // nil: null

	cols *rowCols
	i    int
}

// Headers is how many headers the row has.
func (v *RowView) Headers() int {
	if v.cols.hdrs.IsNull(v.i) {
		return 0
	}
	start, end := v.cols.hdrs.ValueOffsets(v.i)
	return int(end - start)
}

// Header is the row's header j (its value nil: null).
func (v *RowView) Header(j int) (string, []byte) {
	start, _ := v.cols.hdrs.ValueOffsets(v.i)
	k := int(start) + j
	return v.cols.hk.Value(k), bytesAt(v.cols.hv, k)
}

// bytesAt is a's value i, nil when null (not copied).
func bytesAt(a bytesArray, i int) []byte {
	if a.IsNull(i) {
		return nil
	}
	if b := a.Value(i); b != nil {
		return b
	}
	return []byte{}
}

// EachRow calls fn with each row of rec, an Arrow batch of a floe
// table's columns (partition, offset, timestamp, key, value, headers;
// append_time and others are ignored), in rec's order, its bytes not
// copied: how a reader of the table's files (tableread) encodes rows
// without a Row each. A batch of another shape is an error, never a
// panic.
func EachRow(rec arrow.RecordBatch, fn func(v *RowView)) error { return eachRow(rec, fn) }

func eachRow(rec arrow.RecordBatch, fn func(v *RowView)) (err error) {
	defer func() {
		// Arrays that do not hold what their offsets say fail below.
		if r := recover(); r != nil {
			err = fmt.Errorf("batch does not have floe's layout: %v", r)
		}
	}()
	c, err := colsOf(rec)
	if err != nil {
		return err
	}
	v := RowView{cols: &c}
	for i := 0; i < int(rec.NumRows()); i++ {
		v.i, v.Partition, v.Offset = i, c.part.Value(i), c.off.Value(i)
		v.Timestamp = c.ts.Value(i).ToTime(c.tsUnit).UnixMilli()
		v.Key, v.Value = bytesAt(c.key, i), bytesAt(c.val, i)
		fn(&v)
	}
	return nil
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
