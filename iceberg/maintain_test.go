package iceberg_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
)

// dayRows returns n rows per partition from from on, timestamped on the
// given days in turn, and the watermark above them.
func dayRows(seed uint64, parts int32, n int, from iceberg.Watermark, days ...time.Time) ([]iceberg.Row, iceberg.Watermark) {
	rows, wm := genRows(seed, parts, n, from)
	for i := range rows {
		rows[i].Timestamp = days[i%len(days)].Add(time.Duration(i) * time.Second)
	}
	return rows, wm
}

// dataFileCount returns the table's data files.
func dataFileCount(t *testing.T, w *iceberg.Writer, topic string) int64 {
	t.Helper()
	st, err := w.Describe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st.DataFiles
}

// TestRewriteSmallFiles: many small appends, then a rewrite: fewer
// files, every offset exactly once, rows in partition and offset order
// in each file, the watermark unchanged (property and summary); a
// rewrite whose commit fails (or whose context ends before it) leaves the
// table as it was, and its files are deleted as orphans, live ones never.
func TestRewriteSmallFiles(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, fc := icetest.Open(t, cfg, iceberg.Options{MaxAttempts: 1})
		const topic = "small.files"
		day1 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		day2 := day1.AddDate(0, 0, 1)
		var all []iceberg.Row
		from := iceberg.Watermark{}
		for round := range 8 {
			rows, wm := dayRows(uint64(50+round), 2, 6, from, day1, day2)
			if _, err := w.Append(ctx, topic, rows, wm); err != nil {
				t.Fatal(err)
			}
			all, from = append(all, rows...), wm
		}
		if n := dataFileCount(t, w, topic); n != 16 {
			t.Fatalf("%d data files after 8 appends over 2 days, want 16", n)
		}
		opts := iceberg.RewriteOptions{MinFiles: 4}

		// A commit that fails, and one whose context ends between
		// writing the files and committing them: nothing changes.
		fc.FailNextCommits(1, false)
		if _, err := w.RewriteSmallFiles(ctx, topic, opts); !errors.Is(err, icetest.ErrInjected) {
			t.Fatalf("rewrite with a failing commit: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		fc.BeforeCommit(func(context.Context, table.Identifier) error { cancel(); return context.Canceled })
		if _, err := w.RewriteSmallFiles(cctx, topic, opts); err == nil {
			t.Fatal("rewrite cancelled before its commit succeeded")
		}
		fc.BeforeCommit(nil)
		if n := dataFileCount(t, w, topic); n != 16 {
			t.Errorf("%d data files after failed rewrites, want 16", n)
		}
		checkTable(t, w, topic, all)

		res, err := w.RewriteSmallFiles(ctx, topic, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Days != 2 || res.FilesRemoved != 16 || res.FilesAdded != 2 || res.SnapshotID == 0 {
			t.Errorf("rewrite = %+v, want 2 days, 16 files into 2", res)
		}
		if n := dataFileCount(t, w, topic); n != 2 {
			t.Errorf("%d data files after the rewrite, want 2", n)
		}
		checkTable(t, w, topic, all)
		if got, err := w.Watermark(ctx, topic); err != nil || !got.Equal(from) {
			t.Errorf("watermark after the rewrite = %v, %v; want %v", got, err, from)
		}
		tbl, err := w.Load(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		snap := tbl.CurrentSnapshot()
		if snap.SnapshotID != res.SnapshotID || snap.Summary.Properties[iceberg.PropWatermark] != from.String() ||
			snap.Summary.Operation != "replace" {
			t.Errorf("rewrite snapshot %d: %+v, want operation replace with watermark %s", snap.SnapshotID, snap.Summary, from)
		}
		files, err := iceberg.ScanFiles(ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		for path, rows := range files {
			for i := 1; i < len(rows); i++ {
				a, b := rows[i-1], rows[i]
				if b.Partition < a.Partition || b.Partition == a.Partition && b.Offset <= a.Offset {
					t.Fatalf("%s: row %d (%d/%d) after (%d/%d)", path, i, b.Partition, b.Offset, a.Partition, a.Offset)
				}
			}
		}
		// Nothing due any more.
		if res, err := w.RewriteSmallFiles(ctx, topic, opts); err != nil || res.SnapshotID != 0 {
			t.Errorf("second rewrite = %+v, %v; want nothing to do", res, err)
		}
		// The failed rewrites' files are orphans; live files are kept.
		m, err := w.Maintain(ctx, topic, iceberg.MaintainOptions{KeepSnapshots: 1, OrphanAge: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		if m.OrphanFiles < 4 { // two failed rewrites of 2 files each, plus the old small files
			t.Errorf("Maintain deleted %d orphan files, want the failed rewrites' and the replaced ones", m.OrphanFiles)
		}
		checkTable(t, w, topic, all)
		// Appends go on after it.
		rows, wm := dayRows(70, 2, 5, from, day2)
		if _, err := w.Append(ctx, topic, rows, wm); err != nil {
			t.Fatal(err)
		}
		checkTable(t, w, topic, append(all, rows...))
	})
}

// TestExpireDays: the table's retention deletes the files of days wholly
// older than the cutoff, keeps the rest and the watermark.
func TestExpireDays(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		const topic = "expiring"
		d1 := time.Date(2026, 1, 10, 5, 0, 0, 0, time.UTC)
		d2, d3 := d1.AddDate(0, 0, 1), d1.AddDate(0, 0, 2)
		rows, wm := dayRows(80, 2, 9, iceberg.Watermark{}, d1, d2, d3)
		if _, err := w.Append(ctx, topic, rows, wm); err != nil {
			t.Fatal(err)
		}
		// The cutoff is inside day 3: days 1 and 2 are wholly older.
		res, err := w.Maintain(ctx, topic, iceberg.MaintainOptions{KeepSnapshots: 5, ExpireBefore: d3.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		var keep []iceberg.Row
		for _, r := range rows {
			if !r.Timestamp.Before(time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)) {
				keep = append(keep, r)
			}
		}
		if res.ExpiredFiles != 2 || res.ExpiredRows != int64(len(rows)-len(keep)) {
			t.Errorf("Maintain = %+v, want 2 files and %d rows expired", res, len(rows)-len(keep))
		}
		checkTable(t, w, topic, keep)
		if got, err := w.Watermark(ctx, topic); err != nil || !got.Equal(wm) {
			t.Errorf("watermark after expiry = %v, %v; want %v", got, err, wm)
		}
		if n, _, err := w.ExpireDays(ctx, topic, d3.Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("second expiry: %d files, %v; want none", n, err)
		}
	})
}

// TestDropTable: Tables lists the namespace's tables with their topics;
// DropTable removes one from the catalog and deletes its files.
func TestDropTable(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		for _, topic := range []string{"kept", "dropped"} {
			rows, wm := genRows(90, 1, 5, iceberg.Watermark{})
			if _, err := w.Append(ctx, topic, rows, wm); err != nil {
				t.Fatal(err)
			}
		}
		refs, err := w.Tables(ctx)
		if err != nil || len(refs) != 2 {
			t.Fatalf("Tables = %v, %v; want 2", refs, err)
		}
		tbl, err := w.Load(ctx, "dropped")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.DropTable(ctx, w.Identifier("dropped")); err != nil {
			t.Fatal(err)
		}
		refs, err = w.Tables(ctx)
		if err != nil || len(refs) != 1 || refs[0].Topic != "kept" {
			t.Errorf("Tables after the drop = %v, %v; want kept only", refs, err)
		}
		if _, err := w.Load(ctx, "dropped"); err == nil {
			t.Error("the dropped table still loads")
		}
		if loc := tbl.Location(); !strings.HasPrefix(loc, "s3://") {
			var left []string
			_ = filepath.WalkDir(strings.TrimPrefix(loc, "file://"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("the dropped table's files are still there: %v", left)
			}
		}
		if err := w.DropTable(ctx, w.Identifier("dropped")); err != nil {
			t.Errorf("dropping a dropped table: %v", err)
		}
	})
}
