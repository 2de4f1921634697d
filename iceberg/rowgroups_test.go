package iceberg_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
	if _, err := w.Append(ctx, "t", rows, iceberg.Watermark{0: 10000}); err != nil {
		t.Fatal(err)
	}
	tbl, err := w.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d data files, want 1", len(tasks))
	}
	if groups := len(tasks[0].File.SplitOffsets()); groups < 10000/iceberg.DefaultRowGroupRows {
		t.Fatalf("a file of 10,000 rows has %d row groups, want at least %d (at most %d rows each)", groups, 10000/iceberg.DefaultRowGroupRows, iceberg.DefaultRowGroupRows)
	}
}
