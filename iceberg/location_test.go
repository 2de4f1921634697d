package iceberg_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
)

// TestSQLiteLocationsAreURIs: floe dev's tables (SQLite catalog, local
// warehouse) name their location, metadata and data files as file://
// URIs: Java's FileIO implementations (Spark's and Trino's, S3FileIO
// and HadoopFileIO alike) resolve a location by its scheme and refuse a
// bare path.
func TestSQLiteLocationsAreURIs(t *testing.T) {
	ctx := testCtx(t)
	w, err := iceberg.Open(ctx, iceberg.DefaultSQLiteConfig(t.TempDir()), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rows, wm := genRows(1, 2, 10, iceberg.Watermark{})
	if _, err := w.Append(ctx, "orders", rows, wm); err != nil {
		t.Fatal(err)
	}
	tbl, err := w.EnsureTable(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	for what, loc := range map[string]string{"location": tbl.Location(), "metadata": tbl.MetadataLocation()} {
		if !strings.HasPrefix(loc, "file:///") {
			t.Errorf("%s %q: want a file:/// URI", what, loc)
		}
	}
	files, err := iceberg.ScanFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no data files")
	}
	for f := range files {
		if !strings.HasPrefix(f, "file:///") {
			t.Errorf("data file %q: want a file:/// URI", f)
		}
	}
	// Maintenance (orphan deletion compares the files it lists with
	// those referenced) keeps every row of the table.
	if _, err := w.Maintain(ctx, "orders", iceberg.MaintainOptions{KeepSnapshots: 1, OrphanAge: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	checkTable(t, w, "orders", rows)
}
