package readpath

import (
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func ref(base, count int64) metadata.BatchRef {
	return metadata.BatchRef{TopicID: 1, Partition: 0, BaseOffset: base, LastOffset: base + count - 1,
		FileKey: "f", ByteLength: 10 * count, RecordCount: int32(count)}
}

func liveIndex(parts, refs int) *Index {
	x := NewIndex(parts, refs)
	x.SetLive(true)
	return x
}

var k0 = Key{1, 0}

// The index answers at the known high watermark and from the batches it
// holds, and sends everything else to the store.
func TestIndexAnswersTailAndHeldBatches(t *testing.T) {
	x := liveIndex(10, 100)
	if _, _, ok := x.Lookup(k0, 0, 1<<20); ok {
		t.Fatal("an unknown partition was answered")
	}
	gen := x.Begin(k0)
	x.Stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 5})
	if refs, st, ok := x.Lookup(k0, 5, 1<<20); !ok || len(refs) != 0 || st.HighWatermark != 5 {
		t.Fatalf("tail: %v %v %v", refs, st, ok)
	}
	if _, _, ok := x.Lookup(k0, 3, 1<<20); ok {
		t.Fatal("offset 3, below the tail and not held, was answered")
	}
	x.Committed([]metadata.BatchRef{ref(5, 3)})
	x.Committed([]metadata.BatchRef{ref(8, 2)})
	refs, st, ok := x.Lookup(k0, 6, 1<<20)
	if !ok || st.HighWatermark != 10 || len(refs) != 2 || refs[0].BaseOffset != 5 || refs[1].BaseOffset != 8 {
		t.Fatalf("held batches from 6: %v %v %v", refs, st, ok)
	}
	if refs, _, _ := x.Lookup(k0, 5, 1); len(refs) != 1 {
		t.Fatalf("a budget of 1 byte got %d batches, want 1", len(refs))
	}
	if _, _, ok := x.Lookup(k0, 11, 1<<20); ok {
		t.Fatal("an offset past the high watermark was answered (the store reports it out of range)")
	}
	// Another agent's commit: the index knows there is more but not where.
	x.Notice(metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 12}}})
	if _, _, ok := x.Lookup(k0, 10, 1<<20); ok {
		t.Fatal("data committed elsewhere was answered as absent")
	}
	// A batch after a gap starts a new run.
	x.Committed([]metadata.BatchRef{ref(12, 1)})
	if refs, _, ok := x.Lookup(k0, 12, 1<<20); !ok || len(refs) != 1 {
		t.Fatalf("batch after a gap: %v %v", refs, ok)
	}
	if _, _, ok := x.Lookup(k0, 6, 1<<20); ok {
		t.Fatal("batches before the gap still answered")
	}
}

// Knowledge that may be stale is not trusted: after an All notice, while
// notices are not applied, and for a query that raced with either.
func TestIndexDistrustsWhatMayBeStale(t *testing.T) {
	x := liveIndex(10, 100)
	x.Stored(k0, x.Begin(k0), nil, metadata.PartitionState{HighWatermark: 5})
	x.Notice(metadata.Notice{All: true})
	if _, _, ok := x.Lookup(k0, 5, 1); ok {
		t.Fatal("answered after an All notice")
	}
	gen := x.Begin(k0)
	x.Notice(metadata.Notice{All: true})
	x.Stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 5})
	if _, _, ok := x.Lookup(k0, 5, 1); ok {
		t.Fatal("a query begun before an All notice was trusted")
	}
	// A notice landing while a query runs raises what the query stores.
	gen = x.Begin(k0)
	x.Notice(metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, Partition: 0, HighWatermark: 9}}})
	x.Stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 5})
	if _, _, ok := x.Lookup(k0, 5, 1); ok {
		t.Fatal("a query's high watermark overrode a newer notice")
	}
	if _, st, ok := x.Lookup(k0, 9, 1); !ok || st.HighWatermark != 9 {
		t.Fatalf("tail at the notice's high watermark: %v %v", st, ok)
	}
	x.SetLive(false)
	x.Stored(k0, x.Begin(k0), nil, metadata.PartitionState{HighWatermark: 9})
	if _, _, ok := x.Lookup(k0, 9, 1); ok {
		t.Fatal("answered while notices are not applied")
	}
}

// The index holds at most maxParts partitions and maxRefs batches.
func TestIndexIsBounded(t *testing.T) {
	x := liveIndex(4, 10)
	for p := int32(0); p < 20; p++ {
		k := Key{1, p}
		x.Stored(k, x.Begin(k), nil, metadata.PartitionState{Partition: p})
		var refs []metadata.BatchRef
		for i := int64(0); i < 8; i++ {
			r := ref(i, 1)
			r.Partition = p
			refs = append(refs, r)
		}
		x.Committed(refs)
		if len(x.parts) > 4 || x.lru.Len() != len(x.parts) {
			t.Fatalf("%d partitions tracked, bound 4", len(x.parts))
		}
		held := 0
		for _, el := range x.parts {
			held += len(el.Value.(*indexEntry).refs)
		}
		if held != x.nrefs || held > 10 {
			t.Fatalf("%d batches held (counted %d), bound 10", held, x.nrefs)
		}
	}
	// One partition keeps at most maxRefsPerPartition.
	x = liveIndex(4, 1000)
	x.Stored(k0, x.Begin(k0), nil, metadata.PartitionState{})
	for i := int64(0); i < 100; i++ {
		x.Committed([]metadata.BatchRef{ref(i, 1)})
	}
	if n := len(x.parts[k0].Value.(*indexEntry).refs); n != maxRefsPerPartition {
		t.Fatalf("one partition holds %d batches, want %d", n, maxRefsPerPartition)
	}
	if refs, _, ok := x.Lookup(k0, 99, 1<<20); !ok || len(refs) != 1 {
		t.Fatalf("the newest batch: %v %v", refs, ok)
	}
}
