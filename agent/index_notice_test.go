package agent

import (
	"testing"

	"github.com/floe-broker/floe/metadata"
)

// A notice that carries another agent's batches lets the index answer its
// readers without a query; batches of untracked partitions are ignored.
func TestIndexHoldsNoticedBatches(t *testing.T) {
	x := liveIndex(10, 100)
	gen := x.begin(k0)
	x.stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 5})
	other := ref(0, 4)
	other.Partition = 7 // nobody reads it here
	x.notice(metadata.Notice{
		Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 10}, {TopicID: 1, Partition: 7, HighWatermark: 4}},
		Batches:    []metadata.BatchRef{ref(5, 3), ref(8, 2), other},
	})
	refs, st, ok := x.lookup(k0, 5, 1<<20)
	if !ok || st.HighWatermark != 10 || len(refs) != 2 || refs[0].BaseOffset != 5 || refs[1].BaseOffset != 8 {
		t.Fatalf("noticed batches from 5: %v %v %v", refs, st, ok)
	}
	if _, ok := x.parts[partKey{1, 7}]; ok {
		t.Fatal("a partition nobody reads is tracked after a notice")
	}
	// A notice without batches: the index knows there is more, not where.
	x.notice(metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 12}}})
	if _, _, ok := x.lookup(k0, 10, 1<<20); ok {
		t.Fatal("data announced without batches was answered")
	}
	// The next notice's batches, past that gap, start a new run.
	x.notice(metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 13}},
		Batches: []metadata.BatchRef{ref(12, 1)}})
	if refs, _, ok := x.lookup(k0, 12, 1<<20); !ok || len(refs) != 1 {
		t.Fatalf("batch after a gap: %v %v", refs, ok)
	}
}
