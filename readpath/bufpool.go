package readpath

import (
	"sync"
	"sync/atomic"
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

// filePoolStep rounds a fresh buffer's capacity up, so that files of about
// the same size share buffers: to a multiple of 256 KiB, or for a file
// under 2 MiB of the largest power of two (at least 4 KiB) that is at most
// an eighth of it (a 100 KiB file of a low-linger agent in a 256 KiB
// buffer would cost the cache 2.5 times its size).
const filePoolStep = 256 << 10

// poolStep is the rounding step of a fresh buffer for n bytes.
func poolStep(n int) int {
	step := filePoolStep
	for step > 4<<10 && step > n/8 {
		step /= 2
	}
	return step
}

func newFilePool(maxIdle int64) *filePool { return &filePool{max: maxIdle} }

// get returns a buffer of length n: an idle one with room for n that
// wastes at most an eighth of n plus its step (the cache counts a file
// by its buffer's capacity: what it wastes is room cached files lose),
// else a fresh one.
func (p *filePool) get(n int) []byte {
	if n <= 0 {
		return make([]byte, n)
	}
	if p.max > 0 {
		p.mu.Lock()
		best, most := -1, n+n/8+poolStep(n)
		for i, b := range p.free {
			if c := cap(b); c >= n && c <= most && (best < 0 || c < cap(p.free[best])) {
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
	step := poolStep(n)
	return make([]byte, n, (n+step-1)/step*step)
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
