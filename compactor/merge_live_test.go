package compactor_test

import (
	"context"
	mrand "math/rand/v2"
	"sync"
	"testing"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// putCounter records the capacity of the buffers a job uploads (what it
// allocated for them).
type putCounter struct {
	*readCounter
	mu   sync.Mutex // protects caps
	caps []int
}

func (s *putCounter) Put(ctx context.Context, key string, data []byte, opts objectstore.PutOptions) error {
	s.mu.Lock()
	s.caps = append(s.caps, cap(data))
	s.mu.Unlock()
	return s.readCounter.Put(ctx, key, data, opts)
}

// TestMergeReadsLiveBytes: 30 files of 100 partitions' batches each
// (about 60 KiB), mostly emptied (99 partitions' records deleted): the
// merge reads only the live batches (one range GET per live run) and
// allocates its file for them, not for the sources' sizes; records and
// offsets stay readable.
func TestMergeReadsLiveBytes(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(61, 62))
		tp, want := producedTopic(t, e, "sparse", 100, nil, 30, 4, rnd)
		for p := int32(1); p < 100; p++ {
			if _, err := e.meta.DeleteRecords(ctx, tp.ID, p, metadata.DeleteToHighWatermark); err != nil {
				t.Fatal(err)
			}
		}
		live, sources := int64(0), int64(0)
		for _, b := range allRefs(t, e, tp.ID, 0) {
			live += b.ByteLength
			sources += b.FileSize
		}
		pc := &putCounter{readCounter: &readCounter{Store: e.store}}
		c := newCompactor(t, env{meta: e.meta, store: pc}, "merge", func(c *compactor.Config) { c.MergeMinAge = 0 })
		r := runOnce(t, c)
		read, gets, _ := pc.take()
		if r.FilesMerged != 30 {
			t.Fatalf("merged %d files, want 30: %+v", r.FilesMerged, r)
		}
		if read != live || gets != 30 {
			t.Errorf("the merge read %d bytes in %d GETs; want the %d live bytes in 30 (the sources hold %d)", read, gets, live, sources)
		}
		if len(pc.caps) != 1 || int64(pc.caps[0]) > live+live/4+4096 {
			t.Errorf("the merge allocated %v bytes for its file; want about the %d live bytes (the sources hold %d)", pc.caps, live, sources)
		}
		got := allRefs(t, e, tp.ID, 0)
		if len(got) != 30 || got[0].FileKey != got[29].FileKey {
			t.Fatalf("after the merge partition 0 has %d batches; want its 30 in one file", len(got))
		}
		checkRecords(t, e, tp.ID, 0, want[0])
	})
}

// allRefs is every live batch of a partition.
func allRefs(t testing.TB, e env, topic int64, p int32) []metadata.BatchRef {
	t.Helper()
	st, err := e.meta.PartitionStates(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := e.meta.FindBatches(context.Background(), topic, p, st[p].LogStartOffset, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// checkRecords reads a partition's batches back and compares their
// records with want.
func checkRecords(t testing.TB, e env, topic int64, p int32, want map[int64]iceberg.Row) {
	t.Helper()
	got := 0
	for _, b := range allRefs(t, e, topic, p) {
		d, err := e.store.Get(context.Background(), b.FileKey, b.ByteOffset, b.ByteLength)
		if err != nil {
			t.Fatal(err)
		}
		err = kbatch.SplitStored(d, func(kb []byte) error {
			_, recs, err := kbatch.DecodeStored(kb, 0)
			for i, r := range recs {
				w, ok := want[b.BaseOffset+int64(i)]
				if !ok || !sameBytes(w.Key, r.Key) || !sameBytes(w.Value, r.Value) {
					t.Fatalf("offset %d: key %q value %q, want %+v", b.BaseOffset+int64(i), r.Key, r.Value, w)
				}
				got++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got != len(want) {
		t.Errorf("partition %d reads %d records, want %d", p, got, len(want))
	}
}
