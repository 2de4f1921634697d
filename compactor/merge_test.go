package compactor_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// row is one metadata batch row of a real file: kafka batches of
// records records each, laid back to back (a run, as the batcher commits
// consecutive batches of a partition).
type row struct {
	topic     int64
	partition int32
	batches   []int // records per Kafka batch
}

// putReal uploads a real object file (logfile format, Kafka batches) of
// the rows and returns its commit.
func putReal(t testing.TB, e env, tag string, rows ...row) metadata.FileCommit {
	t.Helper()
	f, err := tryPutReal(e, tag, rows...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// tryPutReal is putReal for goroutines other than the test's.
func tryPutReal(e env, tag string, rows ...row) (metadata.FileCommit, error) {
	w := logfile.NewWriter(0)
	f := metadata.FileCommit{Key: newKey()}
	for i, r := range rows {
		bc := metadata.BatchCommit{TopicID: r.topic, Partition: r.partition, ProducerID: -1, BaseSequence: metadata.NoSequence}
		for j, n := range r.batches {
			recs := make([]kbatch.Record, n)
			for k := range recs {
				recs[k] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(fmt.Sprintf("%s-%d-%d-%d", tag, i, j, k))}
			}
			kb, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
			if err != nil {
				return f, err
			}
			en, err := w.Append(r.topic, r.partition, kb)
			if err != nil {
				return f, err
			}
			if j == 0 {
				bc.ByteOffset = en.ByteOffset
			}
			bc.ByteLength += en.ByteLength
			bc.RecordCount += en.RecordCount
			bc.MaxTimestamp = max(bc.MaxTimestamp, en.MaxTimestamp)
		}
		f.Batches = append(f.Batches, bc)
	}
	data := w.Finish()
	f.Size = int64(len(data))
	return f, e.store.Put(context.Background(), f.Key, data, objectstore.PutOptions{})
}

func writeReal(t testing.TB, e env, tag string, rows ...row) string {
	t.Helper()
	f := putReal(t, e, tag, rows...)
	res, err := e.meta.CommitFile(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return f.Key
}

// readBack is a full catch-up read of a partition: each batch's offsets
// and bytes, and the files it touched (one GET each when loaded whole).
func readBack(t testing.TB, e env, topic int64, partition int32) (string, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	off, err := e.meta.ListOffset(ctx, topic, partition, metadata.OffsetEarliest, 0)
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := e.meta.FindBatches(ctx, topic, partition, off, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	files := map[string]bool{}
	for _, r := range refs {
		b, err := e.store.Get(ctx, r.FileKey, r.ByteOffset, r.ByteLength)
		if err != nil {
			t.Fatalf("read %s [%d,+%d): %v", r.FileKey, r.ByteOffset, r.ByteLength, err)
		}
		if err := kbatch.Split(b, func(kb []byte) error { _, _, err := kbatch.Decode(kb, 1<<20); return err }); err != nil {
			t.Fatalf("batch at %d does not decode: %v", r.BaseOffset, err)
		}
		fmt.Fprintf(&out, "[%d..%d] %x\n", r.BaseOffset, r.LastOffset, b)
		files[r.FileKey] = true
	}
	return out.String(), files
}

// Small files merge into one: a catch-up read returns byte-identical
// batches at the same offsets from one file instead of many; the old files
// die after the grace period.
func TestMergeSmallFiles(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "m", Partitions: 3})
		other, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "other", Partitions: 1})
		var small []string
		for i := range 24 {
			rows := []row{{tp.ID, int32(i % 3), []int{1 + i%4}}}
			if i%5 == 0 {
				rows = append(rows, row{other.ID, 0, []int{2, 3}}) // a run of two Kafka batches
			}
			small = append(small, writeReal(t, e, fmt.Sprint(i), rows...))
		}
		// Partition 2 loses its first batches: they are not merged.
		if _, err := e.meta.DeleteRecords(ctx, tp.ID, 2, 5); err != nil {
			t.Fatal(err)
		}
		before := map[int32]string{}
		getsBefore, getsAfter := 0, 0
		for p := range int32(3) {
			var files map[string]bool
			before[p], files = readBack(t, e, tp.ID, p)
			getsBefore += len(files)
		}
		otherBefore, _ := readBack(t, e, other.ID, 0)
		waitStore(t, e, storeNow(t, e)) // every file is older than MergeMinAge 0 by the store's clock
		// A grace period no pass outlasts, however slow the machine, for
		// "none deleted yet"; the same compactor then runs with 300 ms.
		c := newCompactor(t, e, "a", func(c *compactor.Config) {
			c.MergeMinAge, c.Grace, c.OrphanAge = 0, time.Hour, 2*time.Hour
		})
		r := runOnce(t, c)
		marked := storeNow(t, e) // every file the pass marked dead was marked by this
		// Retention collects partition 2's first two batches first: the
		// file of the first one dies without merging.
		if r.FilesMerged != 23 || r.FilesMarked != 24 || r.FilesDeleted != 0 {
			t.Fatalf("merge pass: %+v, want 23 small files merged, 24 marked, none deleted yet", r)
		}
		for p := range int32(3) {
			after, files := readBack(t, e, tp.ID, p)
			if after != before[p] {
				t.Errorf("partition %d reads differently after the merge:\nbefore %s\nafter %s", p, before[p], after)
			}
			getsAfter += len(files)
		}
		if otherAfter, files := readBack(t, e, other.ID, 0); otherAfter != otherBefore || len(files) != 1 {
			t.Errorf("the other topic reads differently or from %d files after the merge", len(files))
		}
		t.Logf("catch-up read of 3 partitions: %d GETs (files) before the merge, %d after", getsBefore, getsAfter)
		q, _ := e.meta.DeletionQueue(ctx)
		st, _ := e.meta.TopicStorage(ctx, tp.ID)
		t.Logf("after the merge: topic in %d file(s) of %d bytes (live %d); %d small files of %d bytes queued for deletion",
			st.Files, st.FileBytes, st.LiveBytes, q.Files, q.Bytes)
		if getsAfter != 3 {
			t.Errorf("catch-up read touches %d files after the merge, want 1 per partition", getsAfter)
		}
		c = newCompactor(t, e, "a", func(c *compactor.Config) {
			c.MergeMinAge, c.Grace = 0, 300*time.Millisecond
		})
		waitStore(t, e, marked.Add(300*time.Millisecond)) // the grace period, by the store's clock
		r = runOnce(t, c)
		if r.FilesDeleted < 20 {
			t.Errorf("pass after the grace period: %+v, want the merged-away files deleted", r)
		}
		have := objects(t, e.store)
		for _, k := range small {
			if have[k] {
				t.Errorf("merged-away file %s still stored", k)
			}
		}
		for p := range int32(3) {
			if after, _ := readBack(t, e, tp.ID, p); after != before[p] {
				t.Errorf("partition %d reads differently after the old files were deleted", p)
			}
		}
		// The merged file is a valid object file.
		for k := range have {
			data, err := e.store.Get(ctx, k, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := logfile.ReadIndex(data); err != nil {
				t.Errorf("merged file %s: %v", k, err)
			}
		}
	})
}

// commitMergeFails fails CommitMerge while left > 0 (before calling the
// store: the merged object is uploaded, never committed).
type commitMergeFails struct {
	metadata.Store
	left *atomic.Int64
}

func (f commitMergeFails) CommitMerge(ctx context.Context, m metadata.MergeCommit) (metadata.MergeResult, error) {
	if f.left.Add(-1) >= 0 {
		return metadata.MergeResult{}, fmt.Errorf("injected: %w", metadata.ErrNotApplied)
	}
	return f.Store.CommitMerge(ctx, m)
}

// A merge whose commit fails leaves an orphan (the merged object) that is
// collected after the orphan age; the small files stay referenced and
// readable, and the next merge succeeds.
func TestFailedMergeLeavesOrphan(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "fm", Partitions: 1})
		for i := range 5 {
			writeReal(t, e, fmt.Sprint(i), row{tp.ID, 0, []int{2}})
		}
		before, _ := readBack(t, e, tp.ID, 0)
		waitStore(t, e, storeNow(t, e)) // every file is older than MergeMinAge 0 by the store's clock
		left := new(atomic.Int64)
		left.Store(1)
		c := newCompactor(t, env{meta: commitMergeFails{e.meta, left}, store: e.store}, "a", func(c *compactor.Config) {
			c.MergeMinAge, c.OrphanShards = 0, 256
		})
		if _, err := c.RunOnce(ctx); err == nil {
			t.Fatal("the pass with a failing merge commit reported no error")
		}
		if n := len(objects(t, e.store)); n != 6 {
			t.Fatalf("%d objects after the failed merge, want 5 files and the orphaned merged one", n)
		}
		if after, _ := readBack(t, e, tp.ID, 0); after != before {
			t.Fatal("reads changed after a failed merge")
		}
		// The retry merges; the orphan goes once old enough.
		deadline := time.Now().Add(15 * time.Second)
		for len(objects(t, e.store)) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("objects left: %v", objects(t, e.store))
			}
			runOnce(t, c)
			time.Sleep(100 * time.Millisecond)
		}
		if after, files := readBack(t, e, tp.ID, 0); after != before || len(files) != 1 {
			t.Errorf("after the merge and collection: %d files, same reads %v", len(files), after == before)
		}
	})
}
