package compactor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// kv is a keyed record: "k=v", or "k=" for a tombstone (null value).
type kv string

// writeKeyed commits one row of a partition in its own file: one Kafka
// batch per group of records, back to back (a run). It returns the file's
// key.
func writeKeyed(t testing.TB, e env, topic int64, partition int32, groups ...[]kv) string {
	t.Helper()
	f, err := putKeyed(e, topic, partition, groups...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.meta.CommitFile(context.Background(), f)
	if err != nil || res[0].Err != nil {
		t.Fatalf("commit: %v %v", err, res)
	}
	return f.Key
}

func putKeyed(e env, topic int64, partition int32, groups ...[]kv) (metadata.FileCommit, error) {
	w := logfile.NewWriter(0)
	bc := metadata.BatchCommit{TopicID: topic, Partition: partition, ProducerID: -1, BaseSequence: metadata.NoSequence}
	for j, g := range groups {
		recs := make([]kbatch.Record, len(g))
		for i, r := range g {
			k, v, _ := strings.Cut(string(r), "=")
			recs[i] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(k)}
			if v != "" {
				recs[i].Value = []byte(v)
			}
		}
		kb, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
		if err != nil {
			return metadata.FileCommit{}, err
		}
		en, err := w.Append(topic, partition, kb)
		if err != nil {
			return metadata.FileCommit{}, err
		}
		if j == 0 {
			bc.ByteOffset = en.ByteOffset
		}
		bc.ByteLength += en.ByteLength
		bc.RecordCount += en.RecordCount
		bc.MaxTimestamp = max(bc.MaxTimestamp, en.MaxTimestamp)
	}
	data := w.Finish()
	f := metadata.FileCommit{Key: newKey(), Size: int64(len(data)), Batches: []metadata.BatchCommit{bc}}
	return f, e.store.Put(context.Background(), f.Key, data, objectstore.PutOptions{})
}

// readKeyed reads a partition from its log start to its high watermark
// as a reader does (FindBatches from the next offset, a few batches at a
// time, so that reads start inside gaps) and returns "offset:k=v" lines.
func readKeyed(ctx context.Context, e env, topic int64, partition int32) ([]string, error) {
	off, err := e.meta.ListOffset(ctx, topic, partition, metadata.OffsetEarliest, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		refs, st, err := e.meta.FindBatches(ctx, topic, partition, off, 1)
		if err != nil {
			return nil, err
		}
		if off >= st.HighWatermark {
			return out, nil
		}
		if len(refs) == 0 {
			return nil, fmt.Errorf("no batch at %d below the high watermark %d", off, st.HighWatermark)
		}
		for _, r := range refs {
			b, err := e.store.Get(ctx, r.FileKey, r.ByteOffset, r.ByteLength)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", r.FileKey, err)
			}
			base, n := r.BaseOffset, 0
			err = kbatch.SplitStored(b, func(kb []byte) error {
				info, recs, err := kbatch.DecodeStored(kb, 0)
				for _, kr := range recs {
					if o := base + kr.Offset - info.BaseOffset; o >= off {
						out = append(out, fmt.Sprintf("%d:%s=%s", o, kr.Key, kr.Value))
					}
				}
				base += int64(info.LastOffsetDelta) + 1
				n += len(recs)
				return err
			})
			if err != nil || base != r.LastOffset+1 || n != int(r.RecordCount) {
				return nil, fmt.Errorf("batch %d of %s: %d records to %d, metadata %d to %d: %v", r.BaseOffset, r.FileKey, n, base-1, r.RecordCount, r.LastOffset, err)
			}
			off = r.LastOffset + 1
		}
	}
}

func mustRead(t *testing.T, e env, topic int64, partition int32) string {
	t.Helper()
	recs, err := readKeyed(context.Background(), e, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(recs, " ")
}

// A compacted topic keeps the latest value per key at its original
// offset, drops emptied batches (gaps a reader passes), keeps young
// tombstones and removes them after delete.retention.ms, never touches the
// active tail; a topic with cleanup.policy=delete is untouched; the old
// files die through the dead-file path.
func TestKeyedCompaction(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "kc", Partitions: 1,
			Config: map[string]string{"cleanup.policy": "compact", metadata.ConfigDeleteRetentionMs: "1500"}})
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "plain", Partitions: 1})
		var files []string
		written := storeNow(t, e) // no batch below is older than this
		rows := [][][]kv{
			{{"a=1", "b=1", "c=1"}, {"a=2", "d=1"}}, // 0..4, two Kafka batches
			{{"b=2", "c=", "e=1"}},                  // 5..7, c's tombstone
			{{"a=3"}},                               // 8
			{{"a=4", "b=3"}},                        // 9..10, the active tail
		}
		for _, r := range rows {
			files = append(files, writeKeyed(t, e, tp.ID, 0, r...))
			writeKeyed(t, e, plain.ID, 0, r...)
		}
		plainBefore, _ := readBack(t, e, plain.ID, 0)
		committed := storeNow(t, e) // every batch below was committed by this
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.MergeSmallBytes, c.CompactMinAge = 0, 0 })
		r := runOnce(t, c)
		// Files marked dead are deleted by the first pass past their grace
		// period: counted over every pass (a slow pass may reach it early).
		deleted := r.FilesDeleted
		if r.BatchesCompacted != 1 || r.RecordsRemoved != 4 || r.FilesMarked != 1 {
			t.Fatalf("first pass: %+v; want row 0..4 rewritten, a=1 b=1 c=1 a=2 removed, its file marked", r)
		}
		want := "4:d=1 5:b=2 6:c= 7:e=1 8:a=3 9:a=4 10:b=3"
		if got := mustRead(t, e, tp.ID, 0); got != want {
			t.Fatalf("after the first pass: %s\nwant %s", got, want)
		}
		refs, _, _ := e.meta.FindBatches(ctx, tp.ID, 0, 0, 1<<20)
		if refs[0].BaseOffset != 3 || refs[0].LastOffset != 4 || refs[0].RecordCount != 1 || refs[len(refs)-1].FileKey != files[3] {
			t.Errorf("batches after the first pass: %+v; want the first Kafka batch gone, the second [3, 4] with 1 record, the tail in its file", refs)
		}
		// The tombstone is young while the store's clock says so (measured
		// around the pass: a loaded machine may take longer than its 1.5 s).
		const retention = 1500 * time.Millisecond
		removed := 0
		r = runOnce(t, c)
		deleted += r.FilesDeleted
		if young := storeNow(t, e).Sub(written) < retention; young && (r.BatchesCompacted != 0 || r.RecordsRemoved != 0) {
			t.Errorf("second pass: %+v, want nothing (young tombstone)", r)
		}
		removed += r.RecordsRemoved
		waitStore(t, e, committed.Add(retention)) // the tombstone expires
		r = runOnce(t, c)
		deleted += r.FilesDeleted
		if removed += r.RecordsRemoved; removed != 1 {
			t.Fatalf("passes until after delete.retention.ms removed %d records (last %+v); want the tombstone removed", removed, r)
		}
		if got, want := mustRead(t, e, tp.ID, 0), "4:d=1 5:b=2 7:e=1 8:a=3 9:a=4 10:b=3"; got != want {
			t.Fatalf("after the tombstone expired: %s\nwant %s", got, want)
		}
		writeKeyed(t, e, tp.ID, 0, []kv{"b=4"}) // 11: the old tail joins the section
		r = runOnce(t, c)
		deleted += r.FilesDeleted
		if r.RecordsRemoved != 2 {
			t.Fatalf("pass after the tail moved: %+v; want a=3 and b=2 removed", r)
		}
		marked := storeNow(t, e) // every file the passes marked dead was marked by this
		if got, want := mustRead(t, e, tp.ID, 0), "4:d=1 7:e=1 9:a=4 10:b=3 11:b=4"; got != want {
			t.Fatalf("after the tail moved: %s\nwant %s", got, want)
		}
		if got, _ := readBack(t, e, plain.ID, 0); got != plainBefore {
			t.Errorf("the cleanup.policy=delete topic changed:\n%s\nwas\n%s", got, plainBefore)
		}
		waitStore(t, e, marked.Add(300*time.Millisecond)) // newCompactor's grace period
		r = runOnce(t, c)
		deleted += r.FilesDeleted
		have := objects(t, e.store)
		if have[files[0]] || have[files[1]] || have[files[2]] || !have[files[3]] || deleted < 3 {
			t.Errorf("after the grace period (%+v, %d files deleted by the passes): files 0-2 exist %v %v %v, the tail's %v", r, deleted, have[files[0]], have[files[1]], have[files[2]], have[files[3]])
		}
		if got := mustRead(t, e, tp.ID, 0); got != "4:d=1 7:e=1 9:a=4 10:b=3 11:b=4" {
			t.Errorf("after the deletions: %s", got)
		}
	})
}

// Batches younger than min.compaction.lag.ms are the head: not compacted.
func TestKeyedCompactionLag(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "lag", Partitions: 1,
			Config: map[string]string{"cleanup.policy": "compact,delete", metadata.ConfigMinCompactionLagMs: "700"}})
		if err != nil {
			t.Fatal(err)
		}
		written := storeNow(t, e) // no batch below is older than this
		for range 3 {
			writeKeyed(t, e, tp.ID, 0, []kv{"k=1", "k=2"})
		}
		committed := storeNow(t, e) // every batch was committed by this
		before := mustRead(t, e, tp.ID, 0)
		// The compactor's own floor (10 minutes by default) holds too.
		if r := runOnce(t, newCompactor(t, e, "a", nil)); r.RecordsRemoved != 0 {
			t.Fatalf("pass within CompactMinAge: %+v", r)
		}
		// Within the lag while the store's clock says so (measured around
		// the pass, not guessed).
		const lag = 700 * time.Millisecond
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.CompactMinAge = 0 })
		r := runOnce(t, c)
		if within := storeNow(t, e).Sub(written) < lag; within && (r.RecordsRemoved != 0 || mustRead(t, e, tp.ID, 0) != before) {
			t.Fatalf("pass within the lag: %+v", r)
		}
		removed := r.RecordsRemoved
		waitStore(t, e, committed.Add(lag))
		r = runOnce(t, c)
		if removed += r.RecordsRemoved; removed != 3 {
			t.Fatalf("passes until after the lag removed %d records (last %+v), want offsets 0..2 removed (the latest k below the tail is 3)", removed, r)
		}
		if got := mustRead(t, e, tp.ID, 0); got != "3:k=2 4:k=1 5:k=2" {
			t.Errorf("after the lag: %s, want k=2 at 3 and the tail", got)
		}
	})
}

// Readers reading a compacted topic from its start while it is written
// and compacted (and the old files deleted after the grace period) never
// hit a missing object and always see the latest value of every key.
func TestReadersDuringKeyedCompaction(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "rk", Partitions: 1,
			Config: map[string]string{"cleanup.policy": "compact"}})
		if err != nil {
			t.Fatal(err)
		}
		const keys = 5
		var written atomic.Int64 // rows committed: key i has value n-1 in row n-1
		row := func(n int) []kv {
			var g []kv
			for k := range keys {
				g = append(g, kv(fmt.Sprintf("k%d=%d", k, n)))
			}
			return g
		}
		writeKeyed(t, e, tp.ID, 0, row(0))
		written.Store(1)
		var (
			wg       sync.WaitGroup
			missing  atomic.Int64
			reads    atomic.Int64
			firstErr atomic.Value
		)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					low := written.Load() - 1 // every key's value is at least this
					recs, err := readKeyed(ctx, e, tp.ID, 0)
					if ctx.Err() != nil {
						return
					}
					if errors.Is(err, objectstore.ErrNotFound) {
						missing.Add(1)
					}
					if err != nil {
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					last := map[string]int64{}
					for _, r := range recs {
						var o, v int64
						var k string
						if _, err := fmt.Sscanf(strings.Replace(r, "=", " ", 1), "%d:%s %d", &o, &k, &v); err == nil {
							last[k] = v
						}
					}
					for k := range keys {
						if v, ok := last[fmt.Sprintf("k%d", k)]; !ok || v < low {
							firstErr.CompareAndSwap(nil, fmt.Sprintf("key k%d: latest value %d (seen %v), want >= %d", k, v, ok, low))
						}
					}
					reads.Add(1)
				}
			}()
		}
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.Grace = 50 * time.Millisecond; c.MergeSmallBytes, c.CompactMinAge = 0, 0 })
		deadline := time.Now().Add(2 * time.Second)
		for n := 1; time.Now().Before(deadline); n++ {
			writeKeyed(t, e, tp.ID, 0, row(n))
			written.Store(int64(n + 1))
			if _, err := c.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		wg.Wait()
		if v := firstErr.Load(); v != nil || missing.Load() != 0 {
			t.Errorf("%d reads, %d missing objects, first error %v", reads.Load(), missing.Load(), v)
		}
		t.Logf("%d full reads during compaction", reads.Load())
	})
}

// Compacted batches merge like others: the read after merging the small
// files (the compacted one among them) is the same.
func TestMergeAfterKeyedCompaction(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "mk", Partitions: 1,
			Config: map[string]string{"cleanup.policy": "compact"}})
		if err != nil {
			t.Fatal(err)
		}
		writeKeyed(t, e, tp.ID, 0, []kv{"a=1", "b=1"}, []kv{"a=2"})
		writeKeyed(t, e, tp.ID, 0, []kv{"c=1", "a=3"})
		writeKeyed(t, e, tp.ID, 0, []kv{"d=1"})
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.MergeSmallBytes, c.CompactMinAge = 0, 0 })
		if r := runOnce(t, c); r.RecordsRemoved != 2 {
			t.Fatalf("compaction pass: %+v, want a=1 and a=2 removed", r)
		}
		before := mustRead(t, e, tp.ID, 0)
		if before != "1:b=1 3:c=1 4:a=3 5:d=1" {
			t.Fatalf("after compaction: %s", before)
		}
		m := newCompactor(t, e, "a", func(c *compactor.Config) { c.MergeMinAge = 0; c.CompactMaxBytes = 0 })
		if r := runOnce(t, m); r.FilesMerged < 2 {
			t.Fatalf("merge pass: %+v, want the small files merged", r)
		}
		if after := mustRead(t, e, tp.ID, 0); after != before {
			t.Errorf("after merging: %s\nwas %s", after, before)
		}
	})
}
