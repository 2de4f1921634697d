package iceberg

import (
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// defaultBatchRows is the rows per Arrow record batch handed to the
// Parquet writer: large enough for columnar encoding to pay, small
// enough to hold a few of them in memory.
const defaultBatchRows = 8192

// day returns the day of t since the Unix epoch (UTC): the table's
// partition of a row.
func day(t time.Time) int64 {
	us := t.UnixMicro()
	d := us / (24 * 3600 * 1e6)
	if us < 0 && us%(24*3600*1e6) != 0 {
		d--
	}
	return d
}

// sortForFiles orders rows by day of timestamp, then partition and
// offset: the files of a day hold its rows in log order, and the
// clustered Parquet writer sees each day once. rows arrive in
// (partition, offset) order, so a stable sort on the day keeps it.
func sortForFiles(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		da, db := day(a.Timestamp), day(b.Timestamp)
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
}

// columns locates the builders of the table's columns in a record
// builder for its Arrow schema. The columns of every table of floe's
// (partition to value) are required; headers (a topic's table), the
// typed columns value_fields (a topic with a value schema) and reason
// (a rejected table) are filled when the schema has them.
type columns struct {
	partition   *array.Int32Builder
	offset      *array.Int64Builder
	timestamp   *array.TimestampBuilder
	appendTime  *array.TimestampBuilder
	key         *array.BinaryBuilder
	value       *array.BinaryBuilder
	headers     *array.ListBuilder // nil: no headers column
	hdr         *array.StructBuilder
	hdrKey      *array.StringBuilder
	hdrValue    *array.BinaryBuilder
	valueFields *typedBuilder        // nil: no typed columns
	reason      *array.StringBuilder // nil: no reason column
}

// newColumns checks that b's schema is one of floe's layouts and returns
// its builders.
func newColumns(b *array.RecordBuilder) (c columns, err error) {
	defer func() {
		// A type assertion below fails on a schema other than ours.
		if r := recover(); r != nil {
			err = fmt.Errorf("iceberg: table schema does not have floe's layout: %v", r)
		}
	}()
	sc := b.Schema()
	lookup := func(name string) array.Builder {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return nil
		}
		return b.Field(idx[0])
	}
	field := func(name string) array.Builder {
		f := lookup(name)
		if f == nil {
			panic(fmt.Sprintf("no column %q", name))
		}
		return f
	}
	c.partition = field(ColPartition).(*array.Int32Builder)
	c.offset = field(ColOffset).(*array.Int64Builder)
	c.timestamp = field(ColTimestamp).(*array.TimestampBuilder)
	c.appendTime = field(ColAppendTime).(*array.TimestampBuilder)
	c.key = field(ColKey).(*array.BinaryBuilder)
	c.value = field(ColValue).(*array.BinaryBuilder)
	if h := lookup(ColHeaders); h != nil {
		c.headers = h.(*array.ListBuilder)
		c.hdr = c.headers.ValueBuilder().(*array.StructBuilder)
		c.hdrKey = c.hdr.FieldBuilder(0).(*array.StringBuilder)
		c.hdrValue = c.hdr.FieldBuilder(1).(*array.BinaryBuilder)
	}
	if vf := lookup(ColValueFields); vf != nil {
		c.valueFields = newTypedBuilder(vf)
	}
	if r := lookup(ColReason); r != nil {
		c.reason = r.(*array.StringBuilder)
	}
	return c, nil
}

// add appends r to the builders.
func (c *columns) add(r *Row) {
	c.partition.Append(r.Partition)
	c.offset.Append(r.Offset)
	c.timestamp.Append(arrow.Timestamp(r.Timestamp.UnixMicro()))
	c.appendTime.Append(arrow.Timestamp(r.AppendTime.UnixMicro()))
	if r.Key == nil {
		c.key.AppendNull()
	} else {
		c.key.Append(r.Key)
	}
	if r.Value == nil {
		c.value.AppendNull()
	} else {
		c.value.Append(r.Value)
	}
	if c.headers != nil {
		c.headers.Append(true)
		for _, h := range r.Headers {
			c.hdr.Append(true)
			c.hdrKey.Append(h.Key)
			if h.Value == nil {
				c.hdrValue.AppendNull()
			} else {
				c.hdrValue.Append(h.Value)
			}
		}
	}
	if c.valueFields != nil {
		if r.Typed && r.Value != nil {
			c.valueFields.appendValue(r.Value)
		} else {
			c.valueFields.b.AppendNull()
		}
	}
	if c.reason != nil {
		c.reason.Append(r.Reason)
	}
}

// recordBatches returns rows as Arrow record batches of schema, at most
// batchRows rows each and never spanning two days, in the order of rows.
// The caller releases each batch it receives.
func recordBatches(mem memory.Allocator, schema *arrow.Schema, rows []Row, batchRows int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		cols, err := newColumns(b)
		if err != nil {
			yield(nil, err)
			return
		}
		n := 0
		for i := range rows {
			if n > 0 && (n >= batchRows || day(rows[i].Timestamp) != day(rows[i-1].Timestamp)) {
				if !yield(b.NewRecordBatch(), nil) {
					return
				}
				n = 0
			}
			cols.add(&rows[i])
			n++
		}
		if n > 0 {
			yield(b.NewRecordBatch(), nil)
		}
	}
}
