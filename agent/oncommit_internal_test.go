package agent

import (
	"sync/atomic"
	"testing"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/readpath"
)

// The agent caches a file it committed as verified (its batches' CRCs
// were checked when produced, so reads skip them), and hands an owned
// buffer back to the batcher once the file has left the cache.
func TestOnCommitCachesVerified(t *testing.T) {
	for _, owned := range []bool{false, true} {
		a := &Agent{cache: readpath.NewCache(1 << 20), index: readpath.NewIndex(16, 1024), hub: newHub()}
		var released atomic.Int32
		f := batcher.CommittedFile{Key: "f1", Data: make([]byte, 4096)}
		if owned {
			f.Release = func() { released.Add(1) }
		}
		a.OnCommit(f)
		b, ok := a.cache.Acquire("f1")
		if !ok {
			t.Fatalf("owned %v: the committed file is not cached", owned)
		}
		if !b.Verified() {
			t.Errorf("owned %v: the committed file is cached unverified: its reads check every batch's CRC again", owned)
		}
		b.Release()
		if released.Load() != 0 {
			t.Fatalf("owned %v: buffer released while cached", owned)
		}
		a.cache.Add("f2", make([]byte, 1<<20)) // evicts f1
		if owned && released.Load() != 1 {
			t.Errorf("owned: %d releases after eviction, want 1", released.Load())
		}
	}
}
