package compactor_test

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// iceEnv is a log (metadata + object store) and a table catalog of the
// same kind: PostgreSQL + S3, or SQLite + folders.
type iceEnv struct {
	env
	cfg iceberg.Config
}

func iceBackends(t *testing.T, fn func(t *testing.T, e iceEnv)) {
	backends(t, func(t *testing.T, e env) {
		cfg := icetest.SQLiteConfig(t)
		if t.Name()[len(t.Name())-len("postgres+s3"):] == "postgres+s3" {
			cfg = icetest.PostgresConfig(t)
		}
		fn(t, iceEnv{env: e, cfg: cfg})
	})
}

// writer opens a table writer with quick retries; fc injects faults.
func (e iceEnv) writer(t testing.TB) (*iceberg.Writer, *icetest.FaultCatalog) {
	return icetest.Open(t, e.cfg, iceberg.Options{MaxAttempts: 2, RetryWait: time.Millisecond})
}

func iceCompactor(t testing.TB, e iceEnv, owner string, w *iceberg.Writer, mut func(*compactor.Config)) *compactor.Compactor {
	return newCompactor(t, e.env, owner, func(c *compactor.Config) {
		c.Iceberg = w
		if mut != nil {
			mut(c)
		}
	})
}

// produced is what the log holds, by partition and offset.
type produced map[int32]map[int64]iceberg.Row

// produce commits one file holding a Kafka batch of n records for each of
// the partitions, and records what it wrote in want. Records vary: null,
// empty and set keys and values, headers (some with null values), old
// timestamps.
func produce(t testing.TB, e env, topic int64, parts []int32, n int, want produced, rnd *mrand.Rand) {
	t.Helper()
	w := logfile.NewWriter(0)
	f := metadata.FileCommit{Key: newKey()}
	var recs [][]kbatch.Record
	for _, p := range parts {
		rs := make([]kbatch.Record, n)
		for i := range rs {
			r := kbatch.Record{Timestamp: time.Now().UnixMilli() - rnd.Int64N(1000)}
			switch rnd.IntN(4) {
			case 0: // null key
			case 1:
				r.Key = []byte{}
			default:
				r.Key = fmt.Appendf(nil, "key-%d", rnd.IntN(20))
			}
			switch rnd.IntN(5) {
			case 0: // tombstone
			case 1:
				r.Value = []byte{}
			default:
				r.Value = make([]byte, 1+rnd.IntN(300))
				for j := range r.Value {
					r.Value[j] = byte(rnd.Uint32())
				}
			}
			for h := rnd.IntN(3); h > 0; h-- {
				hd := kbatch.Header{Key: fmt.Sprintf("h%d", h)}
				if rnd.IntN(3) > 0 {
					hd.Value = fmt.Appendf(nil, "v%d", rnd.IntN(100))
				}
				r.Headers = append(r.Headers, hd)
			}
			rs[i] = r
		}
		if rnd.IntN(3) == 0 {
			rs[0].Timestamp = time.Date(1971+rnd.IntN(50), 3, 3, 12, 0, 0, 0, time.UTC).UnixMilli() // an old day
		}
		kb, err := kbatch.Encode(rs, kbatch.DefaultEncodeOptions())
		if err != nil {
			t.Fatal(err)
		}
		en, err := w.Append(topic, p, kb)
		if err != nil {
			t.Fatal(err)
		}
		f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: topic, Partition: p, ProducerID: -1, BaseSequence: metadata.NoSequence,
			ByteOffset: en.ByteOffset, ByteLength: en.ByteLength, RecordCount: en.RecordCount, MaxTimestamp: en.MaxTimestamp})
		recs = append(recs, rs)
	}
	data := w.Finish()
	f.Size = int64(len(data))
	if err := e.store.Put(context.Background(), f.Key, data, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := e.meta.CommitFile(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("commit: %v", r.Err)
		}
		p := parts[i]
		if want[p] == nil {
			want[p] = map[int64]iceberg.Row{}
		}
		for j, rec := range recs[i] {
			off := r.BaseOffset + int64(j)
			want[p][off] = iceberg.Row{Partition: p, Offset: off, Timestamp: time.UnixMilli(rec.Timestamp),
				AppendTime: time.UnixMilli(r.LogAppendTime), Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
		}
	}
}

// sameBytes compares two byte slices, null and empty apart.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// checkTable scans topic's table and compares every row and column with
// want: each offset exactly once.
func checkTable(t testing.TB, w *iceberg.Writer, topic string, want produced) {
	t.Helper()
	rows, err := w.Scan(context.Background(), topic, 0)
	if err != nil {
		t.Fatalf("scan %s: %v", topic, err)
	}
	n := 0
	for _, m := range want {
		n += len(m)
	}
	if len(rows) != n {
		t.Errorf("table %s: %d rows, want %d", topic, len(rows), n)
	}
	seen := map[[2]int64]bool{}
	for _, r := range rows {
		k := [2]int64{int64(r.Partition), r.Offset}
		if seen[k] {
			t.Errorf("partition %d offset %d twice", r.Partition, r.Offset)
			continue
		}
		seen[k] = true
		exp, ok := want[r.Partition][r.Offset]
		if !ok {
			t.Errorf("partition %d offset %d: not produced", r.Partition, r.Offset)
			continue
		}
		if !r.Timestamp.Equal(exp.Timestamp) || !r.AppendTime.Equal(exp.AppendTime) || !sameBytes(r.Key, exp.Key) ||
			!sameBytes(r.Value, exp.Value) || len(r.Headers) != len(exp.Headers) {
			t.Errorf("partition %d offset %d: got %v %v %q %q %d headers, want %v %v %q %q %d headers", r.Partition, r.Offset,
				r.Timestamp, r.AppendTime, r.Key, r.Value, len(r.Headers), exp.Timestamp, exp.AppendTime, exp.Key, exp.Value, len(exp.Headers))
			continue
		}
		for i, h := range r.Headers {
			if h.Key != exp.Headers[i].Key || !sameBytes(h.Value, exp.Headers[i].Value) {
				t.Errorf("partition %d offset %d header %d: %q=%q, want %q=%q", r.Partition, r.Offset, i, h.Key, h.Value,
					exp.Headers[i].Key, exp.Headers[i].Value)
			}
		}
	}
}

func createTopic(t testing.TB, e env, name string, parts int32, cfg map[string]string) metadata.Topic {
	t.Helper()
	tp, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: name, Partitions: parts, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// producedTopic creates topic name of n partitions (config cfg) and
// commits rounds files, each of per records in every partition
// (produce); it returns the topic and what it holds.
func producedTopic(t testing.TB, e env, name string, n int32, cfg map[string]string, rounds, per int, rnd *mrand.Rand) (metadata.Topic, produced) {
	t.Helper()
	tp := createTopic(t, e, name, n, cfg)
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	want := produced{}
	for range rounds {
		produce(t, e, tp.ID, parts, per, want, rnd)
	}
	return tp, want
}

// TestIcebergTables: batches older than iceberg.lag land in the topic's
// table, every row and column as produced; younger ones wait; a topic with
// iceberg.enabled=false gets no table.
func TestIcebergTables(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(1, 2))
		on := createTopic(t, e.env, "orders.created", 3, map[string]string{"iceberg.lag": "0"})
		off := createTopic(t, e.env, "plain", 2, map[string]string{"iceberg.enabled": "false", "iceberg.lag": "0"})
		slow := createTopic(t, e.env, "slow", 1, map[string]string{"iceberg.lag": "1h"})
		want, ignored, slowWant := produced{}, produced{}, produced{}
		for range 3 {
			produce(t, e.env, on.ID, []int32{0, 1, 2}, 1+rnd.IntN(40), want, rnd)
			produce(t, e.env, on.ID, []int32{2}, 5, want, rnd)
			produce(t, e.env, off.ID, []int32{0, 1}, 5, ignored, rnd)
			produce(t, e.env, slow.ID, []int32{0}, 5, slowWant, rnd)
		}
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "a", w, nil)
		r := runOnce(t, c)
		if r.IcebergAppends != 1 {
			t.Errorf("report: %d appends, want 1 (one per table with old batches)", r.IcebergAppends)
		}
		checkTable(t, w, on.Name, want)
		for _, tp := range []string{off.Name, slow.Name} {
			wm, err := w.Watermark(ctx, tp)
			if err != nil || len(wm) != 0 {
				t.Errorf("topic %s: watermark %v, %v; want none", tp, wm, err)
			}
		}
		// More data; a pass without new old batches appends nothing.
		produce(t, e.env, on.ID, []int32{1}, 7, want, rnd)
		runOnce(t, c)
		checkTable(t, w, on.Name, want)
		if r := runOnce(t, c); r.IcebergAppends != 0 {
			t.Errorf("idle pass: %d appends", r.IcebergAppends)
		}
		// Turned on later: the table catches up.
		if _, err := e.meta.AlterTopicConfig(ctx, slow.Name, map[string]string{"iceberg.lag": "0"}, nil); err != nil {
			t.Fatal(err)
		}
		runOnce(t, c)
		checkTable(t, w, slow.Name, slowWant)
	})
}

// TestIcebergFaults: twelve rounds of produce, then a compactor pass cancelled at
// a random point or whose table commits fail (before the catalog, or after
// it applied them: a lost answer), then a new compactor: the table ends
// with every offset exactly once.
func TestIcebergFaults(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		rnd := mrand.New(mrand.NewPCG(3, 4))
		tp := createTopic(t, e.env, "faults", 3, map[string]string{"iceberg.lag": "0"})
		want := produced{}
		failed := 0 // passes that failed: the faults took effect
		for round := range 12 {
			produce(t, e.env, tp.ID, []int32{0, 1, 2}[:1+rnd.IntN(3)], 1+rnd.IntN(30), want, rnd)
			w, fc := e.writer(t)
			c := iceCompactor(t, e, fmt.Sprintf("c%d", round), w, func(c *compactor.Config) {
				c.IcebergMaxBytes = 1 + rnd.Int64N(4000) // several passes per round
			})
			switch rnd.IntN(3) {
			case 0:
				fc.FailNextCommits(1+rnd.IntN(4), rnd.IntN(2) == 0)
			case 1:
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd.IntN(40))*time.Millisecond)
				if _, err := c.RunOnce(ctx); err != nil {
					failed++
				}
				cancel()
			}
			for range 3 {
				if _, err := c.RunOnce(context.Background()); err != nil { // the next pass reloads the watermark
					failed++
				}
			}
			fc.FailNextCommits(0, false)
		}
		if failed == 0 {
			t.Error("no pass failed: the faults did not take effect")
		}
		t.Logf("%d passes failed", failed)
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "last", w, nil)
		runOnce(t, c)
		checkTable(t, w, tp.Name, want)
	})
}

// TestIcebergTwoCompactors: two compactors with their own catalog
// connections run at once while records are produced, and bring both
// tables up to the log themselves (no third compactor catches up after
// them): neither pass fails (the table lease lets one of them at a table
// at a time, the other reports the lease not held), each row is
// committed by exactly one of them (their reports' rows add up to what
// was produced), and every offset is in its table exactly once.
func TestIcebergTwoCompactors(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		rnd := mrand.New(mrand.NewPCG(5, 6))
		tps := []metadata.Topic{createTopic(t, e.env, "a", 2, map[string]string{"iceberg.lag": "0"}),
			createTopic(t, e.env, "b", 2, map[string]string{"iceberg.lag": "0"})}
		want := []produced{{}, {}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex // protects the figures below
			appends = make([]int, 2)
			rows    = make([]int, 2)
			notHeld = make([]int, 2)
			errs    []error
		)
		for i := range 2 {
			w, _ := e.writer(t)
			c := iceCompactor(t, e, fmt.Sprintf("c%d", i), w, func(c *compactor.Config) { c.IcebergMaxBytes = 3000 })
			wg.Go(func() {
				for ctx.Err() == nil {
					r, err := c.RunOnce(ctx)
					mu.Lock()
					if err != nil && ctx.Err() == nil {
						errs = append(errs, fmt.Errorf("compactor c%d: %w", i, err))
					}
					appends[i] += r.IcebergAppends
					rows[i] += r.IcebergRows
					for _, l := range r.NotHeld {
						if strings.HasPrefix(l, "iceberg/") {
							notHeld[i]++
						}
					}
					mu.Unlock()
				}
			})
		}
		for range 10 {
			i := rnd.IntN(2)
			produce(t, e.env, tps[i].ID, []int32{0, 1}, 1+rnd.IntN(20), want[i], rnd)
			time.Sleep(time.Duration(rnd.IntN(30)) * time.Millisecond)
		}
		// The two keep running until both tables hold the whole log.
		w, _ := e.writer(t)
		caughtUp := func() bool {
			for i, tp := range tps {
				wm, err := w.Watermark(ctx, tp.Name)
				if err != nil {
					return false
				}
				for p, offs := range want[i] {
					if wm[p] < int64(len(offs)) {
						return false
					}
				}
			}
			return true
		}
		for deadline := time.Now().Add(60 * time.Second); !caughtUp(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the two compactors did not bring the tables up to the log within 60 s")
			}
		}
		cancel()
		wg.Wait()
		for _, err := range errs {
			t.Errorf("a pass failed: %v", err)
		}
		total := 0
		for i := range want {
			for _, offs := range want[i] {
				total += len(offs)
			}
		}
		if rows[0]+rows[1] != total {
			t.Errorf("the compactors committed %d + %d rows, want %d in all (each row by one of them)", rows[0], rows[1], total)
		}
		for i := range 2 {
			if appends[i] == 0 && notHeld[i] == 0 {
				t.Errorf("compactor c%d neither appended nor found a table lease held: it did not run", i)
			}
		}
		for i, tp := range tps {
			checkTable(t, w, tp.Name, want[i])
		}
		t.Logf("appends by compactor: %v, rows %v, table leases not held %v", appends, rows, notHeld)
	})
}

// TestIcebergRetentionWaits: with retention.bytes tiny, retention never
// moves a partition's log start past the table's watermark while the
// topic's table is on (here: while its batches are younger than
// iceberg.lag), does once the table caught up, and trims a topic whose
// table is off at once.
func TestIcebergRetentionWaits(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(7, 8))
		held := createTopic(t, e.env, "held", 2, map[string]string{"iceberg.lag": "1h", "retention.bytes": "1"})
		free := createTopic(t, e.env, "free", 2, map[string]string{"iceberg.enabled": "false", "retention.bytes": "1"})
		want := produced{}
		for range 3 {
			produce(t, e.env, held.ID, []int32{0, 1}, 10, want, rnd)
			produce(t, e.env, free.ID, []int32{0, 1}, 10, produced{}, rnd)
		}
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "a", w, nil)
		logStarts := func(tp metadata.Topic) []metadata.PartitionState {
			st, err := e.meta.PartitionStates(ctx, tp.ID)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		for range 2 {
			runOnce(t, c)
		}
		for _, st := range logStarts(held) {
			if st.LogStartOffset != 0 {
				t.Errorf("held partition %d: log start %d, want 0 (the table holds nothing yet)", st.Partition, st.LogStartOffset)
			}
		}
		for _, st := range logStarts(free) {
			if st.LogStartOffset == 0 {
				t.Errorf("free partition %d: log start 0, want retention to trim it", st.Partition)
			}
		}
		// The table catches up, then retention trims.
		if _, err := e.meta.AlterTopicConfig(ctx, held.Name, map[string]string{"iceberg.lag": "0"}, nil); err != nil {
			t.Fatal(err)
		}
		runOnce(t, c)
		checkTable(t, w, held.Name, want)
		wm, err := w.Watermark(ctx, held.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range logStarts(held) {
			if st.LogStartOffset == 0 || st.LogStartOffset > wm[st.Partition] {
				t.Errorf("held partition %d: log start %d after the table caught up to %d", st.Partition, st.LogStartOffset, wm[st.Partition])
			}
		}
		// New batches wait for the table again.
		if _, err := e.meta.AlterTopicConfig(ctx, held.Name, map[string]string{"iceberg.lag": "1h"}, nil); err != nil {
			t.Fatal(err)
		}
		produce(t, e.env, held.ID, []int32{0, 1}, 10, want, rnd)
		runOnce(t, c)
		for _, st := range logStarts(held) {
			if st.LogStartOffset > wm[st.Partition] {
				t.Errorf("held partition %d: log start %d passed the table's watermark %d", st.Partition, st.LogStartOffset, wm[st.Partition])
			}
		}
	})
}

// TestIcebergCompactedTopic: a topic compacted by key before its table
// caught up: the table gets the records that survived, at their offsets,
// across the gaps compaction left (batches read with DecodeStored).
func TestIcebergCompactedTopic(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		tp := createTopic(t, e.env, "kc", 1, map[string]string{"cleanup.policy": "compact", "iceberg.lag": "1h"})
		for _, r := range [][][]kv{
			{{"a=1", "b=1", "c=1"}, {"a=2", "d=1"}},
			{{"b=2", "c=", "e=1"}},
			{{"a=3"}},
			{{"a=4", "b=3"}},
		} {
			writeKeyed(t, e.env, tp.ID, 0, r...)
		}
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "a", w, func(c *compactor.Config) { c.MergeSmallBytes, c.CompactMinAge = 0, 0 })
		if r := runOnce(t, c); r.RecordsRemoved == 0 || r.IcebergAppends != 0 {
			t.Fatalf("first pass: %+v; want a compaction and no append", r)
		}
		log := mustRead(t, e.env, tp.ID, 0)
		if _, err := e.meta.AlterTopicConfig(ctx, tp.Name, map[string]string{"iceberg.lag": "0"}, nil); err != nil {
			t.Fatal(err)
		}
		runOnce(t, c)
		rows, err := w.Scan(ctx, tp.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(rows, func(a, b iceberg.Row) int { return int(a.Offset - b.Offset) })
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value))
		}
		if strings.Join(got, " ") != log {
			t.Errorf("table: %s\nlog:   %s", strings.Join(got, " "), log)
		}
		wm, _ := w.Watermark(ctx, tp.Name)
		if wm[0] != 11 {
			t.Errorf("watermark %v, want 0:11", wm)
		}
	})
}

// TestIcebergRecreatedTopic: a topic deleted and created again under the
// same name gets a table of its own records (the old table is renamed),
// not the old table whose watermark would skip its first offsets.
func TestIcebergRecreatedTopic(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(9, 10))
		cfg := map[string]string{"iceberg.lag": "0"}
		old := createTopic(t, e.env, "re", 2, cfg)
		produce(t, e.env, old.ID, []int32{0, 1}, 20, produced{}, rnd)
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "a", w, nil)
		runOnce(t, c)
		if err := e.meta.DeleteTopic(ctx, "re"); err != nil {
			t.Fatal(err)
		}
		tp := createTopic(t, e.env, "re", 2, map[string]string{"iceberg.lag": "0", "retention.bytes": "1"})
		want := produced{}
		produce(t, e.env, tp.ID, []int32{0, 1}, 5, want, rnd)
		runOnce(t, c)
		runOnce(t, c)
		checkTable(t, w, tp.Name, want)
		st, err := e.meta.PartitionStates(ctx, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st {
			if s.LogStartOffset != 5 {
				t.Errorf("partition %d: log start %d, want 5 (trimmed once the new table holds it)", s.Partition, s.LogStartOffset)
			}
		}
		renamed, err := w.Catalog().CheckTableExists(ctx, []string{"floe", fmt.Sprintf("re_x%d", old.ID)})
		if err != nil || !renamed {
			t.Errorf("old table renamed: %v, %v", renamed, err)
		}
	})
}
