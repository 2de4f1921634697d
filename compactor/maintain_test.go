package compactor_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
)

// metricValue returns the value of the series of name whose topic label
// is topic (the sum over series when topic is ""), and whether any.
func metricValue(t testing.TB, reg *prometheus.Registry, name, topic string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var (
		sum   float64
		found bool
	)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := topic == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() == topic {
					match = true
				}
			}
			if !match {
				continue
			}
			found = true
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum, found
}

// cursorOf reads the table's lease cursor of tp.
func cursorOf(t testing.TB, e iceEnv, tp metadata.Topic) metadata.IcebergCursor {
	t.Helper()
	s, err := e.meta.JobCursor(context.Background(), metadata.IcebergLease(tp.Name))
	if err != nil {
		t.Fatal(err)
	}
	cur, ok := metadata.ReadIcebergCursor(s)
	if !ok || cur.TopicID != tp.ID {
		t.Fatalf("cursor %q is not topic %d's", s, tp.ID)
	}
	return cur
}

// TestIcebergMaintenance: appends with maintenance off leave many
// snapshots and small files, and the files of a failed commit; the first
// pass of a compactor with maintenance on expires the snapshots, rewrites
// the small files (fewer files, every offset exactly once, the watermark
// unchanged), deletes the orphans and records the maintenance and the
// table's figures in the cursor and the metrics; the next pass within the
// interval does not maintain again. A topic whose batches wait for
// iceberg.lag shows its lag in records, bytes and seconds.
func TestIcebergMaintenance(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(11, 12))
		tp := createTopic(t, e.env, "kept.tidy", 2, map[string]string{"iceberg.lag": "0"})
		slow := createTopic(t, e.env, "slow", 1, map[string]string{"iceberg.lag": "1h"})
		want, slowWant := produced{}, produced{}
		w, fc := e.writer(t)
		off := iceCompactor(t, e, "a", w, func(c *compactor.Config) { c.IcebergMaintain.Interval = 0 })
		for round := range 8 {
			produce(t, e.env, tp.ID, []int32{0, 1}, 1+rnd.IntN(10), want, rnd)
			if round == 3 { // a failed commit leaves orphan files
				fc.FailNextCommits(2, false)
				if _, err := off.RunOnce(ctx); err == nil {
					t.Fatal("a pass whose commits fail succeeded")
				}
				fc.FailNextCommits(0, false)
			}
			runOnce(t, off)
		}
		produce(t, e.env, slow.ID, []int32{0}, 10, slowWant, rnd)
		before, err := w.Describe(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := w.Load(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n < 8 || before.DataFiles < 8 {
			t.Fatalf("before maintenance: %d snapshots, %d data files; want 8 at least", n, before.DataFiles)
		}
		if cur := cursorOf(t, e, tp); cur.MaintainedMs != 0 {
			t.Fatalf("maintained with maintenance off: %+v", cur)
		}

		reg := prometheus.NewRegistry()
		on := iceCompactor(t, e, "b", w, func(c *compactor.Config) {
			c.Registerer = reg
			c.IcebergMaintain = compactor.IcebergMaintainConfig{Interval: time.Hour, KeepSnapshots: 2,
				OrphanAge: time.Millisecond, RewriteMinFiles: 2}
		})
		time.Sleep(5 * time.Millisecond) // the orphans pass OrphanAge (1 ms; the file times and time.Now are one clock); the metric below checks the effect
		runOnce(t, on)
		after, err := w.Describe(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		checkTable(t, w, tp.Name, want)
		if !after.Watermark.Equal(before.Watermark) || after.Rows != before.Rows {
			t.Errorf("after maintenance: watermark %v, %d rows; want %v, %d", after.Watermark, after.Rows, before.Watermark, before.Rows)
		}
		if after.DataFiles >= before.DataFiles {
			t.Errorf("after maintenance: %d data files, want fewer than %d", after.DataFiles, before.DataFiles)
		}
		if tbl, err = w.Load(ctx, tp.Name); err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n > 2 {
			t.Errorf("after maintenance: %d snapshots, want 2 at most", n)
		}
		cur := cursorOf(t, e, tp)
		if cur.MaintainedMs == 0 || !cur.HasTotals || cur.Rows != after.Rows || cur.DataFiles != after.DataFiles ||
			cur.DataBytes != after.Bytes || cur.SnapshotID != after.SnapshotID {
			t.Errorf("cursor %+v does not record the maintenance and the table %+v", cur, after)
		}
		for name, min := range map[string]float64{
			"floe_iceberg_maintenance_expired_snapshots_total": 1,
			"floe_iceberg_maintenance_rewritten_files_total":   2,
			"floe_iceberg_maintenance_orphan_files_total":      1,
		} {
			if v, _ := metricValue(t, reg, name, tp.Name); v < min {
				t.Errorf("%s = %v, want %v at least", name, v, min)
			}
		}
		for name, v := range map[string]float64{
			"floe_iceberg_table_rows":        float64(after.Rows),
			"floe_iceberg_table_data_files":  float64(after.DataFiles),
			"floe_iceberg_table_data_bytes":  float64(after.Bytes),
			"floe_iceberg_table_lag_records": 0,
		} {
			if got, ok := metricValue(t, reg, name, tp.Name); !ok || got != v {
				t.Errorf("%s{topic=%q} = %v (%v), want %v", name, tp.Name, got, ok, v)
			}
		}
		if v, _ := metricValue(t, reg, "floe_iceberg_table_lag_records", slow.Name); v != 10 {
			t.Errorf("lag of the waiting topic: %v records, want 10", v)
		}
		if v, _ := metricValue(t, reg, "floe_iceberg_table_lag_bytes", slow.Name); v <= 0 {
			t.Errorf("lag of the waiting topic: %v bytes, want > 0", v)
		}
		if _, ok := metricValue(t, reg, "floe_iceberg_table_lag_seconds", slow.Name); !ok {
			t.Error("no lag in seconds for the waiting topic")
		}
		// Within the interval: not maintained again.
		produce(t, e.env, tp.ID, []int32{0}, 3, want, rnd)
		runOnce(t, on)
		if again := cursorOf(t, e, tp); again.MaintainedMs != cur.MaintainedMs {
			t.Errorf("maintained again within the interval: %d, then %d", cur.MaintainedMs, again.MaintainedMs)
		}
		checkTable(t, w, tp.Name, want)
		// A table turned off loses its series; the others keep theirs.
		if _, err := e.meta.AlterTopicConfig(ctx, slow.Name, map[string]string{"iceberg.enabled": "false"}, nil); err != nil {
			t.Fatal(err)
		}
		runOnce(t, on)
		if _, ok := metricValue(t, reg, "floe_iceberg_table_lag_records", slow.Name); ok {
			t.Error("a table turned off keeps its series")
		}
		if _, ok := metricValue(t, reg, "floe_iceberg_table_rows", tp.Name); !ok {
			t.Error("a table on lost its series")
		}
	})
}

// TestIcebergTableRetention: iceberg.retention.ms deletes the table's
// rows of days wholly older than it (produce writes some records with
// timestamps decades old), keeps the others and the watermark; the log's
// retention is not affected.
func TestIcebergTableRetention(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(13, 14))
		tp := createTopic(t, e.env, "short.memory", 2, map[string]string{"iceberg.lag": "0", "iceberg.retention.ms": "240h"})
		want := produced{}
		for range 6 {
			produce(t, e.env, tp.ID, []int32{0, 1}, 5, want, rnd)
		}
		w, _ := e.writer(t)
		runOnce(t, iceCompactor(t, e, "a", w, nil))
		cutoff := time.Now().Add(-240 * time.Hour)
		kept, dropped := produced{}, 0
		for p, m := range want {
			kept[p] = map[int64]iceberg.Row{}
			for off, r := range m {
				if iceberg.DayExpired(int32(r.Timestamp.UTC().Unix()/86400), cutoff) {
					dropped++
					continue
				}
				kept[p][off] = r
			}
		}
		if dropped == 0 {
			t.Fatal("no record with an old timestamp: the test proves nothing")
		}
		checkTable(t, w, tp.Name, kept)
		wm, err := w.Watermark(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		for p, m := range want {
			if wm[p] != int64(len(m)) {
				t.Errorf("partition %d: watermark %d, want %d", p, wm[p], len(m))
			}
		}
	})
}

// TestIcebergMaintainTwoCompactors: two compactors maintaining at every
// visit (orphan age 50 ms) while records are produced: every commit to a
// table is made by the holder of its lease (so never two at once), and
// every offset is in the table exactly once. Deleting orphans that young
// would break the table if two compactors wrote it at once.
func TestIcebergMaintainTwoCompactors(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		rnd := mrand.New(mrand.NewPCG(15, 16))
		tps := []metadata.Topic{createTopic(t, e.env, "a", 2, map[string]string{"iceberg.lag": "0"}),
			createTopic(t, e.env, "b", 2, map[string]string{"iceberg.lag": "0"})}
		want := []produced{{}, {}}
		ctx, cancel := context.WithCancel(context.Background())
		var (
			wg        sync.WaitGroup
			commits   atomic.Int64
			notHolder atomic.Int64
			passes    [2]atomic.Int64
		)
		for i := range 2 {
			owner := fmt.Sprintf("c%d", i)
			w, fc := e.writer(t)
			fc.BeforeCommit(func(ctx context.Context, ident table.Identifier) error {
				commits.Add(1)
				held, err := e.meta.AcquireLease(context.WithoutCancel(ctx), metadata.IcebergLease(ident[len(ident)-1]), owner, 2*time.Minute)
				if err == nil && !held {
					notHolder.Add(1)
				}
				return nil
			})
			c := iceCompactor(t, e, owner, w, func(c *compactor.Config) {
				c.IcebergMaxBytes = 3000
				c.IcebergMaintain = compactor.IcebergMaintainConfig{Interval: time.Millisecond, KeepSnapshots: 1,
					OrphanAge: 50 * time.Millisecond, RewriteMinFiles: 1}
			})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if _, err := c.RunOnce(ctx); err == nil {
						passes[i].Add(1)
					}
				}
			}()
		}
		for range 16 {
			i := rnd.IntN(2)
			produce(t, e.env, tps[i].ID, []int32{0, 1}, 1+rnd.IntN(20), want[i], rnd)
			time.Sleep(time.Duration(rnd.IntN(120)) * time.Millisecond) // interleave with the passes
		}
		// Both compactors at work, and enough commits to tell, however
		// slow the machine.
		for deadline := time.Now().Add(time.Minute); commits.Load() < 4 || passes[0].Load() == 0 || passes[1].Load() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				break // reported below
			}
		}
		cancel()
		wg.Wait()
		if n := notHolder.Load(); n > 0 {
			t.Errorf("%d of %d table commits made without the table's lease", n, commits.Load())
		}
		w, _ := e.writer(t)
		runOnce(t, iceCompactor(t, e, "last", w, nil))
		for i, tp := range tps {
			checkTable(t, w, tp.Name, want[i])
		}
		if commits.Load() < 4 || passes[0].Load() == 0 || passes[1].Load() == 0 {
			t.Errorf("%d table commits, passes by compactor %d and %d in a minute: too few to tell", commits.Load(), passes[0].Load(), passes[1].Load())
		}
		t.Logf("%d commits; passes by compactor: %d, %d", commits.Load(), passes[0].Load(), passes[1].Load())
	})
}

// TestIcebergMaintainFaults: rounds of produce, each followed by passes
// that maintain at every visit (rewriting whatever has two small files)
// while commits fail (before the catalog or after it applied them) or
// the pass is cancelled at a random point — between a rewrite's files and
// its commit among them: every offset exactly once at the end.
func TestIcebergMaintainFaults(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		rnd := mrand.New(mrand.NewPCG(17, 18))
		tp := createTopic(t, e.env, "shaky", 2, map[string]string{"iceberg.lag": "0"})
		want := produced{}
		failed := 0
		maint := compactor.IcebergMaintainConfig{Interval: time.Millisecond, KeepSnapshots: 2, OrphanAge: time.Second, RewriteMinFiles: 1}
		for round := range 10 {
			produce(t, e.env, tp.ID, []int32{0, 1}, 1+rnd.IntN(20), want, rnd)
			w, fc := e.writer(t)
			c := iceCompactor(t, e, fmt.Sprintf("c%d", round), w, func(c *compactor.Config) { c.IcebergMaintain = maint })
			switch rnd.IntN(3) {
			case 0:
				fc.FailNextCommits(1+rnd.IntN(3), rnd.IntN(2) == 0)
			case 1:
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd.IntN(60))*time.Millisecond)
				if _, err := c.RunOnce(ctx); err != nil {
					failed++
				}
				cancel()
			}
			for range 2 {
				if _, err := c.RunOnce(context.Background()); err != nil {
					failed++
				}
			}
			fc.FailNextCommits(0, false)
		}
		if failed == 0 {
			t.Error("no pass failed: the faults did not take effect")
		}
		w, _ := e.writer(t)
		runOnce(t, iceCompactor(t, e, "last", w, func(c *compactor.Config) { c.IcebergMaintain = maint }))
		checkTable(t, w, tp.Name, want)
		st, err := w.Describe(context.Background(), tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d passes failed; the table: %d rows in %d files", failed, st.Rows, st.DataFiles)
	})
}

// TestIcebergDropDeletedTopics: with DropDeletedTopics a deleted topic's
// table is dropped, and so is the old table of a topic deleted and
// created again (renamed TABLE_xID); without it, both are kept.
func TestIcebergDropDeletedTopics(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(19, 20))
		gone := createTopic(t, e.env, "gone", 1, map[string]string{"iceberg.lag": "0"})
		stay := createTopic(t, e.env, "stay", 1, map[string]string{"iceberg.lag": "0"})
		// With a value schema: its non-conforming values go to its rejected
		// table, renamed with its table when the topic is re-created.
		schema := map[string]string{"iceberg.lag": "0", metadata.ConfigValueSchema: `{"type":"object"}`}
		again := createTopic(t, e.env, "again", 1, schema)
		want, againWant := produced{}, produced{}
		produce(t, e.env, gone.ID, []int32{0}, 5, produced{}, rnd)
		produce(t, e.env, stay.ID, []int32{0}, 5, want, rnd)
		produceValues(t, e.env, again.ID, 0, []string{`{"a":1}`, "not json", `{}`, "nor this", `{"b":2}`}, produced{})
		w, _ := e.writer(t)
		runOnce(t, iceCompactor(t, e, "a", w, nil))
		for _, name := range []string{gone.Name, again.Name} {
			if err := e.meta.DeleteTopic(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		again2 := createTopic(t, e.env, "again", 1, schema)
		produce(t, e.env, again2.ID, []int32{0}, 3, againWant, rnd)
		produceValues(t, e.env, again2.ID, 0, []string{"not json either"}, againWant)
		retired := table.Identifier{iceberg.DefaultNamespace, fmt.Sprintf("again_x%d", again.ID)}
		retiredRejected := table.Identifier{iceberg.DefaultNamespace, fmt.Sprintf("again_rejected_x%d", again.ID)}
		// The default keeps them. The old table shares the new one's
		// location: the new one's orphan deletion must leave its files.
		keep := func(c *compactor.Config) {
			c.IcebergMaintain = compactor.IcebergMaintainConfig{Interval: time.Millisecond, KeepSnapshots: 1, OrphanAge: time.Millisecond}
		}
		runOnce(t, iceCompactor(t, e, "keep", w, keep)) // renames the old table
		time.Sleep(5 * time.Millisecond)                // its files pass OrphanAge (1 ms; the file times and time.Now are one clock)
		runOnce(t, iceCompactor(t, e, "keep2", w, keep))
		if _, err := w.Load(ctx, gone.Name); err != nil {
			t.Fatalf("the deleted topic's table was not kept: %v", err)
		}
		old, err := w.Catalog().LoadTable(ctx, retired)
		if err != nil {
			t.Fatalf("the re-created topic's old table %v: %v; want it kept", retired, err)
		}
		if rows, err := iceberg.ScanTable(ctx, old, 0); err != nil || len(rows) != 5 {
			t.Fatalf("the re-created topic's old table: %d rows, %v; want its 5", len(rows), err)
		}
		// Its old rejected table shares the new rejected table's location:
		// the new one's orphan deletion leaves its files.
		oldRejected, err := w.Catalog().LoadTable(ctx, retiredRejected)
		if err != nil {
			t.Fatalf("the re-created topic's old rejected table %v: %v; want it kept", retiredRejected, err)
		}
		if offs := scanOffsets(t, oldRejected); len(offs) != 2 {
			t.Fatalf("the re-created topic's old rejected table: offsets %v; want its 2", offs)
		}
		checkRejected := func(what string) {
			t.Helper()
			st, err := w.DescribeRejected(ctx, again2.Name)
			if err != nil || st.Rows < 1 {
				t.Fatalf("%s: the re-created topic's rejected table %+v, %v; want a row at least", what, st, err)
			}
			rtbl, err := w.Catalog().LoadTable(ctx, w.RejectedIdentifier(again2.Name))
			if err != nil {
				t.Fatal(err)
			}
			if offs := scanOffsets(t, rtbl); int64(len(offs)) != st.Rows {
				t.Fatalf("%s: the re-created topic's rejected table reads %d rows, its summary says %d", what, len(offs), st.Rows)
			}
		}
		checkRejected("kept")
		runOnce(t, iceCompactor(t, e, "drop", w, func(c *compactor.Config) { c.IcebergMaintain.DropDeletedTopics = true }))
		if _, err := w.Load(ctx, gone.Name); err == nil {
			t.Error("the deleted topic's table was not dropped")
		}
		for _, ident := range []table.Identifier{retired, retiredRejected} {
			if ok, err := w.Catalog().CheckTableExists(ctx, ident); err != nil || ok {
				t.Errorf("the re-created topic's old table %v: %v, %v; want it dropped", ident, ok, err)
			}
		}
		checkRejected("after the drop")
		checkTable(t, w, stay.Name, want)
		checkTable(t, w, again2.Name, againWant)
	})
}
