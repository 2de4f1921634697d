package batcher_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// TestFakeMetaFollowsTheStore holds fakeMeta (faults off) to the real
// store's CommitFiles on generated cases within what the fake models:
// calls of one to four files of plain batches (fakeMeta models no
// producer) over several partitions, several in one file to one partition
// too, some files committed again with the same key (a retry, alone or
// among new files). Every answer's base offsets and every partition's high
// watermark must be the SQLite store's.
func TestFakeMetaFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	real, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	var topics []metadata.Topic
	for i := range 2 {
		tp, err := real.CreateTopic(ctx, metadata.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: 3})
		if err != nil {
			t.Fatal(err)
		}
		topics = append(topics, tp)
	}
	fake := newFakeMeta()
	rnd := mrand.New(mrand.NewPCG(1, 2))
	var files []metadata.FileCommit
	n := 0
	for call := range 120 {
		var set []metadata.FileCommit
		inSet := map[string]bool{}
		for range 1 + rnd.IntN(4) {
			var f metadata.FileCommit
			if len(files) > 0 && rnd.IntN(4) == 0 {
				f = files[rnd.IntN(len(files))] // a retry of an earlier file
			} else {
				n++
				f = metadata.FileCommit{Key: fmt.Sprintf("v1/files/%02x/f%d", n%256, n)}
				var at int64
				for range 1 + rnd.IntN(4) {
					tp := topics[rnd.IntN(len(topics))]
					c := int32(1 + rnd.IntN(5))
					f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: tp.ID, Partition: rnd.Int32N(tp.Partitions),
						ByteOffset: at, ByteLength: 100, RecordCount: c, MaxTimestamp: 1700000000000,
						ProducerID: -1, BaseSequence: metadata.NoSequence})
					at += 100
				}
				f.Size = at + 64
				files = append(files, f)
			}
			if !inSet[f.Key] {
				inSet[f.Key] = true
				set = append(set, f)
			}
		}
		want, err := real.CommitFiles(ctx, set)
		if err != nil {
			t.Fatalf("call %d: the store: %v", call, err)
		}
		got, err := fake.CommitFiles(ctx, set)
		if err != nil || len(got) != len(want) {
			t.Fatalf("call %d: fakeMeta answered %d files, %v; the store %d", call, len(got), err, len(want))
		}
		for i := range want {
			if len(got[i]) != len(want[i]) {
				t.Fatalf("call %d file %d: fakeMeta %d results, the store %d", call, i, len(got[i]), len(want[i]))
			}
			for j := range want[i] {
				if want[i][j].Err != nil || got[i][j].BaseOffset != want[i][j].BaseOffset {
					t.Fatalf("call %d file %d (%s) batch %d: fakeMeta base offset %d, the store %d (%v)", call, i, set[i].Key, j,
						got[i][j].BaseOffset, want[i][j].BaseOffset, want[i][j].Err)
				}
			}
		}
	}
	for _, tp := range topics {
		states, err := real.PartitionStates(ctx, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if h := fake.highWatermark(tp.ID, st.Partition); h != st.HighWatermark {
				t.Errorf("%s/%d: fakeMeta high watermark %d, the store %d", tp.Name, st.Partition, h, st.HighWatermark)
			}
		}
	}
}
