package readpath

import (
	"testing"

	"github.com/floe-broker/floe/metadata"
)

// A notice that carries another agent's batches lets the index answer its
// readers without a query; batches of untracked partitions are ignored.
func TestIndexHoldsNoticedBatches(t *testing.T) {
	x := liveIndex(10, 100)
	gen := x.Begin(k0)
	x.Stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 5})
	other := ref(0, 4)
	other.Partition = 7 // nobody reads it here
	x.Notice(metadata.Notice{
		Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 10}, {TopicID: 1, Partition: 7, HighWatermark: 4}},
		Batches:    []metadata.BatchRef{ref(5, 3), ref(8, 2), other},
	})
	refs, st, ok := x.Lookup(k0, 5, 1<<20)
	if !ok || st.HighWatermark != 10 || len(refs) != 2 || refs[0].BaseOffset != 5 || refs[1].BaseOffset != 8 {
		t.Fatalf("noticed batches from 5: %v %v %v", refs, st, ok)
	}
	if _, ok := x.parts[Key{1, 7}]; ok {
		t.Fatal("a partition nobody reads is tracked after a notice")
	}
	// A notice without batches: the index knows there is more, not where.
	x.Notice(metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 12}}})
	if _, _, ok := x.Lookup(k0, 10, 1<<20); ok {
		t.Fatal("data announced without batches was answered")
	}
	// The next notice's batches, past that gap, start a new run.
	x.Notice(metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 13}},
		Batches: []metadata.BatchRef{ref(12, 1)}})
	if refs, _, ok := x.Lookup(k0, 12, 1<<20); !ok || len(refs) != 1 {
		t.Fatalf("batch after a gap: %v %v", refs, ok)
	}
}

// Two agents commit to one partition: agent A's notice carries its
// batches 0-9 and 20-29, agent B's (10-19) comes later. The index must
// not hold A's batches as one run, or a reader at 0 would be sent from 0
// to 9 and then 20, never seeing 10-19.
func TestIndexNoticeWithAnotherAgentsGap(t *testing.T) {
	x := liveIndex(10, 100)
	gen := x.Begin(k0)
	x.Stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 0})
	x.Notice(metadata.Notice{
		Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 30}},
		Batches:    []metadata.BatchRef{ref(0, 10), ref(20, 10)},
	})
	refs, _, ok := x.Lookup(k0, 0, 1<<20)
	if !ok || len(refs) != 1 || refs[0].BaseOffset != 0 || refs[0].LastOffset != 9 {
		t.Fatalf("from 0: %v %v, want only the run 0-9", refs, ok)
	}
	if refs, _, ok := x.Lookup(k0, 10, 1<<20); ok {
		t.Fatalf("from 10 (another agent's commit, not noticed yet): answered %v", refs)
	}
	// B's notice arrives: 0-19 are held, 20-29 must be asked for.
	x.Notice(metadata.Notice{
		Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 30}},
		Batches:    []metadata.BatchRef{ref(10, 10)},
	})
	refs, _, ok = x.Lookup(k0, 0, 1<<20)
	if !ok || len(refs) != 2 || refs[1].BaseOffset != 10 || refs[1].LastOffset != 19 {
		t.Fatalf("from 0 after B's notice: %v %v", refs, ok)
	}
	for i := 1; i < len(refs); i++ {
		if refs[i].BaseOffset != refs[i-1].LastOffset+1 {
			t.Fatalf("held runs with a gap: %v", refs)
		}
	}
}
