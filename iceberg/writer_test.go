package iceberg_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
)

// genRows returns n records per partition from offset from[p] on, with
// keys, null keys and values, empty ones, headers (null values among
// them) and timestamps from 1969 to now, sorted by partition and offset;
// and the watermark above them.
func genRows(seed uint64, parts int32, n int, from iceberg.Watermark) ([]iceberg.Row, iceberg.Watermark) {
	rnd := rand.New(rand.NewPCG(seed, 7))
	old := []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		time.Date(2001, 9, 9, 1, 46, 40, 123_456_789, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC),
	}
	now := time.Now().UTC()
	var rows []iceberg.Row
	wm := iceberg.Watermark{}
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			off := from[p] + int64(i)
			r := iceberg.Row{Partition: p, Offset: off, AppendTime: now.Add(time.Duration(off) * time.Millisecond)}
			switch i % 4 {
			case 0:
				r.Timestamp = old[rnd.IntN(len(old))]
			default:
				r.Timestamp = now.Add(-time.Duration(rnd.IntN(3600)) * time.Second)
			}
			switch i % 5 {
			case 0: // null key
			case 1:
				r.Key = []byte{}
			default:
				r.Key = fmt.Appendf(nil, "key-%d", rnd.IntN(8))
			}
			switch i % 7 {
			case 0: // null value: a tombstone
			case 1:
				r.Value = []byte{}
			default:
				r.Value = make([]byte, rnd.IntN(300))
				for j := range r.Value {
					r.Value[j] = byte(rnd.IntN(256))
				}
			}
			for h := 0; h < i%3; h++ {
				hdr := kbatch.Header{Key: fmt.Sprintf("h%d", h), Value: fmt.Appendf(nil, "v%d", off)}
				if h == 1 && i%2 == 0 {
					hdr.Value = nil
				}
				r.Headers = append(r.Headers, hdr)
			}
			rows = append(rows, r)
		}
		wm[p] = from[p] + int64(n)
	}
	return rows, wm
}

// normal returns rows as the table gives them back: microsecond UTC
// times, no headers as nil, sorted by partition and offset.
func normal(rows []iceberg.Row) []iceberg.Row {
	out := make([]iceberg.Row, len(rows))
	for i, r := range rows {
		r.Timestamp = r.Timestamp.Truncate(time.Microsecond).UTC()
		r.AppendTime = r.AppendTime.Truncate(time.Microsecond).UTC()
		if len(r.Headers) == 0 {
			r.Headers = nil
		}
		out[i] = r
	}
	slices.SortFunc(out, func(a, b iceberg.Row) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func rowEqual(a, b iceberg.Row) bool {
	return a.Partition == b.Partition && a.Offset == b.Offset && a.Timestamp.Equal(b.Timestamp) &&
		a.AppendTime.Equal(b.AppendTime) && sameBytes(a.Key, b.Key) && sameBytes(a.Value, b.Value) &&
		slices.EqualFunc(a.Headers, b.Headers, func(x, y kbatch.Header) bool {
			return x.Key == y.Key && sameBytes(x.Value, y.Value)
		})
}

// checkTable scans topic's table and compares every row and column with
// want: each offset exactly once.
func checkTable(t *testing.T, w *iceberg.Writer, topic string, want []iceberg.Row) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := w.Scan(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, want = normal(got), normal(want)
	if len(got) != len(want) {
		t.Errorf("table has %d rows, want %d", len(got), len(want))
	}
	for i := 0; i < min(len(got), len(want)); i++ {
		if !rowEqual(got[i], want[i]) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func forBackends(t *testing.T, fn func(t *testing.T, cfg iceberg.Config)) {
	for _, b := range icetest.Backends {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.Config(t)) })
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestAppendRoundTrip appends records of every shape and reads them
// back column by column; a second append overlapping the first writes
// only what is new; a repeated append writes nothing.
func TestAppendRoundTrip(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		const topic = "orders.created-v1"
		if wm, err := w.Watermark(ctx, topic); err != nil || len(wm) != 0 {
			t.Fatalf("Watermark before the table exists = %v, %v; want empty", wm, err)
		}
		if st, err := w.Describe(ctx, topic); err != nil || st.Exists {
			t.Fatalf("Describe before the table exists = %+v, %v", st, err)
		}
		rows, wm := genRows(1, 3, 40, nil)
		res, err := w.Append(ctx, topic, rows, wm)
		if err != nil {
			t.Fatal(err)
		}
		st, err := w.Describe(ctx, topic)
		if err != nil || !st.Exists || st.Name != "floe.orders_dcreated_hv1" || st.Rows != int64(len(rows)) ||
			st.DataFiles != int64(res.Files) || st.Bytes != res.Bytes || st.SnapshotID != res.SnapshotID ||
			!st.Watermark.Equal(wm) || time.Since(st.SnapshotTime) > time.Minute {
			t.Errorf("Describe = %+v, %v; after %+v", st, err, res)
		}
		if res.Rows != len(rows) || res.Skipped != 0 || res.Files < 1 || res.SnapshotID == 0 || res.Attempts != 1 {
			t.Errorf("first append = %+v", res)
		}
		checkTable(t, w, topic, rows)

		tbl, err := w.Load(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if got := tbl.Identifier(); !slices.Equal(got, table.Identifier{"floe", "orders_dcreated_hv1"}) {
			t.Errorf("identifier = %v", got)
		}
		snap := tbl.CurrentSnapshot()
		if snap == nil || snap.Summary == nil || snap.Summary.Properties[iceberg.PropWatermark] != wm.String() {
			t.Errorf("snapshot summary = %+v, want %s=%s", snap, iceberg.PropWatermark, wm)
		}
		if got := tbl.Properties()[iceberg.PropWatermark]; got != wm.String() {
			t.Errorf("property %s = %q, want %q", iceberg.PropWatermark, got, wm)
		}
		spec := tbl.Spec()
		if f := spec.Field(0); spec.NumFields() != 1 || f.Transform.String() != "day" {
			t.Errorf("partition spec = %v, want day(timestamp)", spec)
		}

		// Overlap: offsets 30..59 of partition 0 and 1, 40..49 of 2.
		more0, _ := genRows(1, 2, 60, nil)
		var more []iceberg.Row
		for _, r := range more0 {
			if r.Offset >= 30 {
				more = append(more, r)
			}
		}
		extra, _ := genRows(2, 3, 10, iceberg.Watermark{2: 40})
		more = append(more, extra[len(extra)-10:]...)
		want2 := iceberg.Watermark{0: 60, 1: 60, 2: 50}
		res, err = w.Append(ctx, topic, more, want2)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != 20+20+10 || res.Skipped != 20 {
			t.Errorf("overlapping append = %+v, want 50 rows written, 20 skipped", res)
		}
		all := append(slices.Clone(rows), more0[40:60]...)
		all = append(all, more0[100:120]...)
		all = append(all, extra[len(extra)-10:]...)
		checkTable(t, w, topic, all)

		res, err = w.Append(ctx, topic, more, want2)
		if err != nil || res.Rows != 0 || res.SnapshotID != 0 || res.Skipped != len(more) {
			t.Errorf("repeated append = %+v, %v; want nothing written", res, err)
		}
		if got, err := w.Watermark(ctx, topic); err != nil || !got.Equal(want2) {
			t.Errorf("Watermark = %v, %v; want %v", got, err, want2)
		}
		checkTable(t, w, topic, all)
	})
}

// TestAppendRefusesBadRows: unsorted rows or rows at or above the
// append's watermark are refused before anything is written.
func TestAppendRefusesBadRows(t *testing.T) {
	ctx := testCtx(t)
	w, fc := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	rows, wm := genRows(3, 2, 5, nil)
	rows[1], rows[2] = rows[2], rows[1]
	if _, err := w.Append(ctx, "t", rows, wm); !errors.Is(err, iceberg.ErrInvalidRows) {
		t.Errorf("unsorted: %v, want ErrInvalidRows", err)
	}
	rows, wm = genRows(3, 2, 5, nil)
	wm[1] = 4
	if _, err := w.Append(ctx, "t", rows, wm); !errors.Is(err, iceberg.ErrInvalidRows) {
		t.Errorf("row above the watermark: %v, want ErrInvalidRows", err)
	}
	if n, _ := fc.Stats(); n != 0 {
		t.Errorf("%d commits for refused appends", n)
	}
}

// TestTargetFileSize: a run larger than the target size makes several
// files, each of one day, its rows in partition and offset order.
func TestTargetFileSize(t *testing.T) {
	ctx := testCtx(t)
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{TargetFileSize: 256 << 10, BatchRows: 512})
	rows, wm := genRows(4, 4, 3000, nil)
	rnd := rand.NewChaCha8([32]byte{4})
	for i := range rows { // two days only, so that files fill up
		rows[i].Timestamp = time.Date(2025, 1, 1+int(rows[i].Offset%2), 0, 0, 0, 0, time.UTC)
		rows[i].Value = make([]byte, 200)
		rnd.Read(rows[i].Value) // incompressible
	}
	res, err := w.Append(ctx, "big", rows, wm)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files < 3 {
		t.Errorf("%d files for %d bytes at a 256 KiB target", res.Files, res.Bytes)
	}
	tbl, err := w.Load(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	files, err := iceberg.ScanFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != res.Files {
		t.Errorf("table has %d files, append reported %d", len(files), res.Files)
	}
	total := 0
	for path, fr := range files {
		total += len(fr)
		for i := 1; i < len(fr); i++ {
			a, b := fr[i-1], fr[i]
			if !a.Timestamp.Truncate(24 * time.Hour).Equal(b.Timestamp.Truncate(24 * time.Hour)) {
				t.Fatalf("%s holds two days", path)
			}
			if b.Partition < a.Partition || b.Partition == a.Partition && b.Offset <= a.Offset {
				t.Fatalf("%s: row %d (%d/%d) after (%d/%d)", path, i, b.Partition, b.Offset, a.Partition, a.Offset)
			}
		}
	}
	if total != len(rows) {
		t.Errorf("files hold %d rows, want %d", total, len(rows))
	}
	t.Logf("%d rows, %d files, %d bytes", len(rows), res.Files, res.Bytes)
}

// barrier holds the first n commits until all n arrived, so that they
// all start from the same snapshot. Serial: they then reach the catalog
// one after the other (the later ones fail the catalog's check of their
// requirements); otherwise at once (they race on the catalog's
// compare-and-swap of the metadata location).
func barrier(t *testing.T, fc *icetest.FaultCatalog, n int, serial bool) {
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
		turn    = make(chan struct{}, 1) // serial: held by the commit in the catalog
	)
	fc.BeforeCommit(func(ctx context.Context, _ table.Identifier) error {
		mu.Lock()
		arrived++
		mine := arrived
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		if mine > n {
			return nil
		}
		select {
		case <-all:
		case <-time.After(20 * time.Second):
			return errors.New("barrier: the other commits never came")
		case <-ctx.Done():
			return ctx.Err()
		}
		if serial {
			turn <- struct{}{}
		}
		return nil
	})
	fc.AfterCommit(func(_ table.Identifier, err error) error {
		if serial {
			select {
			case <-turn:
			default:
			}
		}
		return err
	})
	t.Cleanup(func() {
		fc.BeforeCommit(nil)
		fc.AfterCommit(nil)
	})
}

// TestConcurrentAppends: two appends from the same snapshot, reaching
// the catalog at once or one after the other. The same work: one
// commits, the other finds it covered. Disjoint partitions: the loser
// retries from the new watermark. Either way every offset is in the
// table once. The catalog's conflict errors are logged: one after the
// other, the SQL catalog's is a plain "requirement failed" error, not
// table.ErrCommitFailed.
func TestConcurrentAppends(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, fc := icetest.Open(t, cfg, iceberg.Options{RetryWait: 10 * time.Millisecond})
		rows, wm := genRows(5, 2, 30, nil)
		for _, serial := range []bool{false, true} {
			mode := map[bool]string{false: "at once", true: "serial"}[serial]
			topic := map[bool]string{false: "race", true: "serial"}[serial]

			t.Run("same work "+mode, func(t *testing.T) {
				barrier(t, fc, 2, serial)
				var wg sync.WaitGroup
				results := make([]iceberg.AppendResult, 2)
				errs := make([]error, 2)
				for i := range 2 {
					wg.Go(func() { results[i], errs[i] = w.Append(ctx, topic+"-same", rows, wm) })
				}
				wg.Wait()
				if errs[0] != nil || errs[1] != nil {
					t.Fatalf("appends: %v, %v", errs[0], errs[1])
				}
				won, lost := 0, 0
				for _, r := range results {
					switch {
					case !r.Recovered && r.SnapshotID != 0 && r.Attempts == 1 && r.Rows == len(rows):
						won++
					case r.Recovered && r.SnapshotID == 0 && r.Rows == 0 && r.Files == 0 && r.Watermark.Equal(wm):
						lost++ // found the winner's commit, reported none of its own
					}
				}
				if won != 1 || lost != 1 {
					t.Errorf("results %+v: want one winner and one that found the work committed by the other", results)
				}
				checkTable(t, w, topic+"-same", rows)
			})

			t.Run("disjoint partitions "+mode, func(t *testing.T) {
				// A first snapshot (partition 2), so that the race is
				// over a snapshot, not over the first one.
				base, baseWM := genRows(6, 3, 5, nil)
				base = base[10:]
				if _, err := w.Append(ctx, topic+"-disjoint", base, iceberg.Watermark{2: baseWM[2]}); err != nil {
					t.Fatal(err)
				}
				barrier(t, fc, 2, serial)
				_, before := fc.Stats()
				var wg sync.WaitGroup
				errs := make([]error, 2)
				results := make([]iceberg.AppendResult, 2)
				wg.Go(func() { results[0], errs[0] = w.Append(ctx, topic+"-disjoint", rows[:30], iceberg.Watermark{0: 30}) })
				wg.Go(func() { results[1], errs[1] = w.Append(ctx, topic+"-disjoint", rows[30:], iceberg.Watermark{1: 30}) })
				wg.Wait()
				if errs[0] != nil || errs[1] != nil {
					t.Fatalf("appends: %v, %v", errs[0], errs[1])
				}
				if results[0].Attempts+results[1].Attempts != 3 {
					t.Errorf("attempts %d and %d, want 1 and 2", results[0].Attempts, results[1].Attempts)
				}
				checkTable(t, w, topic+"-disjoint", append(slices.Clone(rows), base...))
				if got, want := w.Watermark(ctx, topic+"-disjoint"); want != nil || !got.Equal(wm.Merge(iceberg.Watermark{2: 5})) {
					t.Errorf("Watermark = %v, %v, want %v", got, want, wm.Merge(iceberg.Watermark{2: 5}))
				}
				_, after := fc.Stats()
				if len(after) != len(before)+1 {
					t.Fatalf("%d commit conflicts reached the catalog, want 1", len(after)-len(before))
				}
				conflict := after[len(before)]
				t.Logf("catalog's conflict error: %v (table.ErrCommitFailed: %v)", conflict, errors.Is(conflict, table.ErrCommitFailed))
				if serial && (errors.Is(conflict, table.ErrCommitFailed) || !strings.Contains(conflict.Error(), `branch "main" has changed`)) {
					t.Errorf("serial conflict: %v; the SQL catalog's plain requirement error was expected (docs/iceberg.md)", conflict)
				}
			})
		}
	})
}

// TestCommitFaults: a commit whose answer is lost after it landed is
// found committed; one that failed is redone; one that keeps failing
// ends in ErrCommitFailed and a later Append finishes the work. Then
// rounds of appends under random faults, each retried until it
// succeeds as the compactor does, leave every offset exactly once.
func TestCommitFaults(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, fc := icetest.Open(t, cfg, iceberg.Options{RetryWait: time.Millisecond, MaxAttempts: 3})
		const topic = "faults"
		var all []iceberg.Row
		from := iceberg.Watermark{}
		next := func(seed uint64) ([]iceberg.Row, iceberg.Watermark) {
			rows, wm := genRows(seed, 3, 10, from)
			all = append(all, rows...)
			from = wm
			return rows, wm
		}

		rows, wm := next(10)
		fc.FailNextCommits(1, true)
		res, err := w.Append(ctx, topic, rows, wm)
		if err != nil || !res.Recovered || res.Rows != len(rows) || res.SnapshotID == 0 {
			t.Errorf("lost answer: %+v, %v; want recovered, committed by this call", res, err)
		}
		checkTable(t, w, topic, all)

		rows, wm = next(11)
		fc.AfterCommit(nil)
		fc.FailNextCommits(1, false)
		res, err = w.Append(ctx, topic, rows, wm)
		if err != nil || res.Recovered || res.Attempts != 2 {
			t.Errorf("failed commit: %+v, %v; want done on attempt 2", res, err)
		}
		checkTable(t, w, topic, all)

		rows, wm = next(12)
		fc.FailNextCommits(3, false)
		if _, err := w.Append(ctx, topic, rows, wm); !errors.Is(err, iceberg.ErrCommitFailed) {
			t.Errorf("failing commits: %v, want ErrCommitFailed", err)
		}
		fc.BeforeCommit(nil)
		if _, err := w.Append(ctx, topic, rows, wm); err != nil {
			t.Errorf("append after the faults: %v", err)
		}
		checkTable(t, w, topic, all)

		// Rounds under random faults; each append repeats the previous
		// round's last rows, as a compactor restarting from an old
		// watermark would.
		rnd := rand.New(rand.NewPCG(3, 4))
		var prev []iceberg.Row
		for round := range 8 {
			rows, wm := next(uint64(100 + round))
			batch := append(slices.Clone(prev), rows...)
			slices.SortFunc(batch, func(a, b iceberg.Row) int {
				return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
			})
			for try := 0; ; try++ {
				if try > 10 {
					t.Fatalf("round %d: no success after %d tries", round, try)
				}
				fc.BeforeCommit(nil)
				fc.AfterCommit(nil)
				switch rnd.IntN(3) {
				case 0:
					fc.FailNextCommits(1+rnd.IntN(4), false)
				case 1:
					fc.FailNextCommits(1+rnd.IntN(2), true)
				}
				if _, err := w.Append(ctx, topic, batch, wm); err == nil {
					break
				} else if !errors.Is(err, iceberg.ErrCommitFailed) {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			prev = rows
		}
		fc.BeforeCommit(nil)
		fc.AfterCommit(nil)
		checkTable(t, w, topic, all)
		if got, err := w.Watermark(ctx, topic); err != nil || !got.Equal(from) {
			t.Errorf("Watermark = %v, %v, want %v", got, err, from)
		}
	})
}

// TestOpen: a dev catalog in a folder that does not exist yet is made;
// a bad config and an unreachable catalog are errors.
func TestOpen(t *testing.T) {
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "a", "b")
	w, err := iceberg.Open(ctx, iceberg.DefaultSQLiteConfig(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.EnsureTable(ctx, "t"); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse", "floe.db", "t", "metadata")); err != nil {
		t.Errorf("table metadata not in the warehouse folder: %v", err)
	}
	bad := iceberg.DefaultSQLiteConfig(dir)
	bad.Options.Namespace = "a.b"
	if _, err := iceberg.Open(ctx, bad, nil); !errors.Is(err, iceberg.ErrInvalidConfig) {
		t.Errorf("dotted namespace: %v, want ErrInvalidConfig", err)
	}
	unreachable := iceberg.DefaultPostgresConfig("postgres://floe@127.0.0.1:1/floe?connect_timeout=2", "b")
	if w, err := iceberg.Open(ctx, unreachable, nil); err == nil {
		w.Close()
		t.Errorf("Open of an unreachable PostgreSQL succeeded")
	}
}

// TestMaintain: expiring snapshots keeps the rows and the watermark (a
// table property); the files of a commit that failed are deleted as
// orphans, and the table is still read and appended to.
func TestMaintain(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, fc := icetest.Open(t, cfg, iceberg.Options{MaxAttempts: 1})
		const topic = "maintained"
		var all []iceberg.Row
		from := iceberg.Watermark{}
		for round := range 4 {
			rows, wm := genRows(uint64(30+round), 2, 10, from)
			if _, err := w.Append(ctx, topic, rows, wm); err != nil {
				t.Fatal(err)
			}
			all, from = append(all, rows...), wm
		}
		// A failed commit leaves its data files behind.
		lost, lostWM := genRows(40, 2, 10, from)
		fc.FailNextCommits(1, false)
		if _, err := w.Append(ctx, topic, lost, lostWM); !errors.Is(err, iceberg.ErrCommitFailed) {
			t.Fatalf("append with a failing commit: %v", err)
		}
		fc.BeforeCommit(nil)

		res, err := w.Maintain(ctx, topic, iceberg.MaintainOptions{KeepSnapshots: 2, OrphanAge: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExpiredSnapshots != 2 || res.OrphanFiles < 1 {
			t.Errorf("Maintain = %+v, want 2 snapshots expired and the failed commit's files deleted", res)
		}
		tbl, err := w.Load(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n != 2 {
			t.Errorf("%d snapshots left, want 2", n)
		}
		if got, err := w.Watermark(ctx, topic); err != nil || !got.Equal(from) {
			t.Errorf("Watermark after expiry = %v, %v; want %v", got, err, from)
		}
		checkTable(t, w, topic, all)
		if _, err := w.Append(ctx, topic, lost, lostWM); err != nil {
			t.Fatal(err)
		}
		checkTable(t, w, topic, append(all, lost...))
		if _, err := w.Maintain(ctx, "no-such-topic", iceberg.DefaultMaintainOptions()); err != nil {
			t.Errorf("Maintain of a missing table: %v", err)
		}
		if _, err := w.Maintain(ctx, topic, iceberg.MaintainOptions{}); !errors.Is(err, iceberg.ErrInvalidConfig) {
			t.Errorf("Maintain keeping no snapshot: %v, want ErrInvalidConfig", err)
		}
	})
}

// TestTwoWriters: two writers with their own catalog connections (two
// compactor replicas without a lease) append the same log at once,
// round after round, each from the watermark it reads, retrying after
// failures: every offset ends in the table exactly once.
func TestTwoWriters(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		const topic, rounds, per = "two-writers", 6, 10
		log, _ := genRows(50, 3, rounds*per, nil)
		writers := make([]*iceberg.Writer, 2)
		for i := range writers {
			writers[i], _ = icetest.Open(t, cfg, iceberg.Options{RetryWait: time.Millisecond})
		}
		if _, err := writers[0].EnsureTable(ctx, topic); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(writers))
		for i, w := range writers {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(i), 9))
				for r := 1; r <= rounds; r++ {
					want := iceberg.Watermark{0: int64(r * per), 1: int64(r * per), 2: int64(r * per)}
					for {
						have, err := w.Watermark(ctx, topic)
						if err != nil {
							errs[i] = err
							return
						}
						var batch []iceberg.Row
						for _, row := range log {
							if row.Offset >= have[row.Partition] && row.Offset < want[row.Partition] {
								batch = append(batch, row)
							}
						}
						time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond)
						_, err = w.Append(ctx, topic, batch, want)
						if err == nil {
							break
						}
						if !errors.Is(err, iceberg.ErrCommitFailed) {
							errs[i] = err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		checkTable(t, writers[0], topic, log)
	})
}

// TestNoReplayOnCatalogRetry: with commit retries turned on in the
// table's properties (commit.retry.num-retries, which a user may set
// from Spark), iceberg-go would replay a conflicting append onto the new
// head and write its rows twice; the pinned snapshot assertion makes it
// fail instead, and the writer's own reload finds the work done.
func TestNoReplayOnCatalogRetry(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, fc := icetest.Open(t, cfg, iceberg.Options{RetryWait: time.Millisecond})
		const topic = "retrying"
		tbl, err := w.EnsureTable(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(map[string]string{"commit.retry.num-retries": "4", "commit.retry.min-wait-ms": "1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var rows []iceberg.Row
		wm := iceberg.Watermark{}
		for round := range 3 {
			barrier(t, fc, 2, false)
			batch, want := genRows(uint64(61+round), 2, 20, wm)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() { _, errs[i] = w.Append(ctx, topic, batch, want) })
			}
			wg.Wait()
			fc.BeforeCommit(nil)
			fc.AfterCommit(nil)
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("round %d: %v, %v", round, errs[0], errs[1])
			}
			rows, wm = append(rows, batch...), want
		}
		checkTable(t, w, topic, rows)
	})
}
