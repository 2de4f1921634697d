package compactor_test

import (
	"context"
	"iter"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
)

// TestIcebergMaintainUnderPlannedScan: a reader plans a scan of a table
// (the files of its current snapshot), then the compactor's maintenance,
// with the default orphan age, rewrites the small files and expires
// snapshots (keep 1, no snapshot age); the reader then reads the planned
// files and gets every row exactly once, and a time-travel read of the
// planned snapshot works: a snapshot superseded within the orphan age is
// kept, with its files. Once it was superseded longer ago than the orphan
// age it expires, and time travel to it fails with an error.
func TestIcebergMaintainUnderPlannedScan(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(21, 22))
		tp := createTopic(t, e.env, "planned", 2, map[string]string{"iceberg.lag": "0"})
		want := produced{}
		w, _ := e.writer(t)
		off := iceCompactor(t, e, "append", w, func(c *compactor.Config) { c.IcebergMaintain.Interval = 0 })
		for range 6 {
			produce(t, e.env, tp.ID, []int32{0, 1}, 1+rnd.IntN(5), want, rnd)
			runOnce(t, off)
		}
		tbl, err := w.Load(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		planned := tbl.Scan()
		tasks, err := planned.PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		plannedID := tbl.Metadata().CurrentSnapshot().SnapshotID
		before, err := w.Describe(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}

		m := compactor.DefaultIcebergMaintainConfig()
		m.Interval, m.KeepSnapshots, m.SnapshotAge, m.RewriteMinFiles = time.Millisecond, 1, 0, 1
		runOnce(t, iceCompactor(t, e, "maintain", w, func(c *compactor.Config) { c.IcebergMaintain = m }))
		after, err := w.Describe(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if after.DataFiles >= before.DataFiles || after.SnapshotID == plannedID {
			t.Fatalf("maintenance rewrote nothing: %d data files before, %d after; snapshot %d, then %d",
				before.DataFiles, after.DataFiles, plannedID, after.SnapshotID)
		}
		_, batches, err := planned.ReadTasks(ctx, tasks)
		if err != nil {
			t.Fatalf("read the planned files after maintenance: %v", err)
		}
		checkOnce(t, "the planned files after maintenance", batches, want)
		cur, err := w.Load(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		_, batches, err = cur.Scan(table.WithSnapshotID(plannedID)).ToArrowRecords(ctx)
		if err != nil {
			t.Fatalf("time travel to the planned snapshot, superseded within the orphan age: %v", err)
		}
		checkOnce(t, "time travel to the planned snapshot", batches, want)
		checkTable(t, w, tp.Name, want)

		// Superseded longer ago than the orphan age: expired.
		m.OrphanAge = 50 * time.Millisecond
		time.Sleep(100 * time.Millisecond)
		runOnce(t, iceCompactor(t, e, "maintain-short", w, func(c *compactor.Config) { c.IcebergMaintain = m }))
		if cur, err = w.Load(ctx, tp.Name); err != nil {
			t.Fatal(err)
		}
		if cur.Metadata().SnapshotByID(plannedID) != nil || len(cur.Metadata().Snapshots()) != 1 {
			t.Fatalf("snapshots %d superseded past the orphan age were kept (planned %d)", len(cur.Metadata().Snapshots()), plannedID)
		}
		if _, err := cur.Scan(table.WithSnapshotID(plannedID)).ToArrowTable(ctx); err == nil {
			t.Errorf("time travel to the expired snapshot %d succeeded", plannedID)
		} else {
			t.Logf("time travel to the expired snapshot: %v", err)
		}
		checkTable(t, w, tp.Name, want)
	})
}

// checkOnce reads batches and checks that they hold each produced row
// exactly once, and nothing else.
func checkOnce(t *testing.T, what string, batches iter.Seq2[arrow.RecordBatch, error], want produced) {
	t.Helper()
	seen, n := map[[2]int64]int{}, 0
	for b, err := range batches {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		parts := b.Column(b.Schema().FieldIndices(iceberg.ColPartition)[0]).(*array.Int32)
		offs := b.Column(b.Schema().FieldIndices(iceberg.ColOffset)[0]).(*array.Int64)
		for i := range int(b.NumRows()) {
			seen[[2]int64{int64(parts.Value(i)), offs.Value(i)}]++
			n++
		}
		b.Release()
	}
	total := 0
	for p, m := range want {
		for o := range m {
			total++
			if c := seen[[2]int64{int64(p), o}]; c != 1 {
				t.Errorf("%s: partition %d offset %d read %d times, want once", what, p, o, c)
			}
		}
	}
	if n != total {
		t.Errorf("%s: %d rows, want %d", what, n, total)
	}
}
