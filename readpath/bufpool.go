package readpath

import (
	"sync"
	"sync/atomic"

	"github.com/floe-broker/floe/batcher"
)

// filePool keeps the buffers of whole files that have left the read cache
// (and whose last reader has let go) for the next loads: a catch-up loads
// file after file of about the same size while evicting as many, and a
// reused buffer is neither zeroed again nor faulted in page by page, as a
// fresh allocation of a few MiB is once the runtime has returned its pages
// to the system. Idle buffers are bounded in bytes (the loads that may run
// at once, MaxLoadingBytes, need no more); beyond that a buffer handed back
// is left to the garbage collector.
type filePool struct {
	max    int64        // idle bytes kept
	reused atomic.Int64 // gets served by an idle buffer

	mu   sync.Mutex // protects idle, free
	idle int64
	free [][]byte
}

func newFilePool(maxIdle int64) *filePool { return &filePool{max: maxIdle} }

// get returns a buffer of length n: an idle one that fits it
// (batcher.BufferFits, the batcher's rule: the cache counts a file by its
// buffer's capacity, and what a buffer wastes is room cached files lose),
// else a fresh one of batcher.BufferCap(n).
func (p *filePool) get(n int) []byte {
	if n <= 0 {
		return make([]byte, n)
	}
	if p.max > 0 {
		p.mu.Lock()
		best := -1
		for i, b := range p.free {
			if c := cap(b); batcher.BufferFits(c, n) && (best < 0 || c < cap(p.free[best])) {
				best = i
			}
		}
		if best >= 0 {
			b := p.free[best]
			last := len(p.free) - 1
			p.free[best], p.free[last] = p.free[last], nil
			p.free = p.free[:last]
			p.idle -= int64(cap(b))
			p.mu.Unlock()
			p.reused.Add(1)
			return b[:n]
		}
		p.mu.Unlock()
	}
	return make([]byte, n, batcher.BufferCap(n))
}

// put keeps b for a later get, unless the pool is full.
func (p *filePool) put(b []byte) {
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle+int64(cap(b)) > p.max {
		return
	}
	p.free = append(p.free, b[:0])
	p.idle += int64(cap(b))
}
