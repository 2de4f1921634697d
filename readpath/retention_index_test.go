package readpath

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// The index does not answer with batches appended too long ago: their
// files may have been merged (and deleted after the grace period).
func TestIndexSendsOldBatchesToTheStore(t *testing.T) {
	x := liveIndex(10, 100)
	gen := x.Begin(k0)
	x.Stored(k0, gen, nil, metadata.PartitionState{HighWatermark: 5})
	now := time.Now().UnixMilli()
	old, young := ref(5, 3), ref(8, 2)
	old.LogAppendTime = now - (indexRefMaxAge + time.Minute).Milliseconds()
	young.LogAppendTime = now
	x.Committed([]metadata.BatchRef{old})
	x.Committed([]metadata.BatchRef{young})
	if refs, _, ok := x.Lookup(k0, 8, 1<<20); !ok || len(refs) != 1 || refs[0].BaseOffset != 8 {
		t.Fatalf("a young batch: %v %v", refs, ok)
	}
	if refs, _, ok := x.Lookup(k0, 6, 1<<20); ok {
		t.Fatalf("a batch appended %v ago was answered from the index: %v", indexRefMaxAge+time.Minute, refs)
	}
}
