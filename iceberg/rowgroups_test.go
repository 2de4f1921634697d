package iceberg_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
)

// TestRowGroupRows: rows that compress well (the table's byte bound on a
// row group counts compressed bytes) still make row groups of at most
// Options.RowGroupRows rows: a file of 10,000 rows of one day holds at
// least three, so a table read's row-group pruning has something to
// prune.
func TestRowGroupRows(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pad := []byte(strings.Repeat("x", 1000))
	var rows []iceberg.Row
	for off := int64(0); off < 10000; off++ {
		rows = append(rows, iceberg.Row{Partition: 0, Offset: off, Timestamp: day, AppendTime: day, Value: pad})
	}
	task := appendOneFile(t, ctx, w, rows)
	if groups := len(task.File.SplitOffsets()); groups < 10000/iceberg.DefaultRowGroupRows {
		t.Fatalf("a file of 10,000 rows has %d row groups, want at least %d (at most %d rows each)", groups, 10000/iceberg.DefaultRowGroupRows, iceberg.DefaultRowGroupRows)
	}
}

// TestValueColumnNotDictionaryEncoded: a table's value column is written
// plain, not dictionary encoded (record values are mostly distinct: the
// dictionary was the row group's values again, in one page the reader
// decodes as one buffer), while a column of few distinct values (the
// partition) keeps its dictionary. (Values of 1 KiB: without the property
// iceberg-go's writer dictionary-encodes them; at 200 bytes it chose
// plain itself.)
func TestValueColumnNotDictionaryEncoded(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var rows []iceberg.Row
	for off := int64(0); off < 3000; off++ {
		v := fmt.Appendf(nil, `{"o":%d,"pad":"%s"}`, off, strings.Repeat("y", 1000))
		rows = append(rows, iceberg.Row{Partition: 0, Offset: off, Timestamp: day, AppendTime: day, Key: []byte("k"), Value: v})
	}
	task := appendOneFile(t, ctx, w, rows)
	f, err := file.OpenParquetFile(strings.TrimPrefix(task.File.FilePath(), "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dictionary := map[string]bool{}
	rg := f.MetaData().RowGroup(0)
	for c := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cc.Encodings() {
			if e == parquet.Encodings.RLEDict || e == parquet.Encodings.PlainDict {
				dictionary[cc.PathInSchema().String()] = true
			}
		}
	}
	if dictionary[iceberg.ColValue] {
		t.Errorf("the value column is dictionary encoded (%v)", dictionary)
	}
	if !dictionary[iceberg.ColPartition] {
		t.Errorf("the partition column is not dictionary encoded (%v): the test sees no dictionary at all", dictionary)
	}
}

// appendOneFile appends rows (of partition 0, offsets from 0) to topic t
// and returns the table's one data file.
func appendOneFile(t *testing.T, ctx context.Context, w *iceberg.Writer, rows []iceberg.Row) table.FileScanTask {
	t.Helper()
	if _, err := w.Append(ctx, "t", rows, iceberg.Watermark{0: int64(len(rows))}); err != nil {
		t.Fatal(err)
	}
	tbl, err := w.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("%d data files (%v), want 1", len(tasks), err)
	}
	return tasks[0]
}
