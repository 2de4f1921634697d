package compactor_test

import (
	"bytes"
	"context"
	"fmt"
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
		time.Sleep(10 * time.Millisecond)
		c := newCompactor(t, e, "a", func(c *compactor.Config) {
			c.MergeMinAge, c.Grace = 0, 300*time.Millisecond
		})
		r := runOnce(t, c)
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
		if getsAfter != 3 {
			t.Errorf("catch-up read touches %d files after the merge, want 1 per partition", getsAfter)
		}
		time.Sleep(400 * time.Millisecond)
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
