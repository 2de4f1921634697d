package batcher

import (
	"sync"
	"sync/atomic"
)

// File buffers are reused once nothing reads them: a fresh buffer costs
// the zeroing of its pages, and on some VMs a page fault per 4 KiB (see
// docs/benchmarks.md). A file's buffer has two holders: its upload (until
// the store's Put returns, even past the upload deadline) and its commit
// path, which hands it to Options.OnCommit; the hook gives it back with
// CommittedFile.Release once nothing reads it. A hook that never calls
// Release keeps the buffer to itself (the garbage collector takes it):
// that is always safe.

// bufPool holds file buffers nobody references, bounded in count and
// bytes. A buffer serves a file only if it is not much larger (fits): the
// file's buffer then lives on in the read cache, which holds all of it,
// and a pool that handed its largest buffers to every file kept the
// cache's memory at the size of the largest files ever written (at linger
// 20 ms: 560 MiB of buffers behind 256 MiB of files, docs/benchmarks.md).
type bufPool struct {
	maxBufs  int
	maxBytes int

	mu    sync.Mutex // protects free and bytes
	free  [][]byte   // oldest first
	bytes int
}

func newBufPool(maxBufs, maxBytes int) *bufPool {
	return &bufPool{maxBufs: maxBufs, maxBytes: maxBytes}
}

// fits reports whether a buffer of capacity c may hold a file of n bytes:
// it has room and wastes at most an eighth of n.
func fits(c, n int) bool { return c >= n && c-n <= n/8 }

// get returns an empty buffer with room for n bytes, the smallest that
// fits, or nil if the pool has none.
func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if fits(cap(b), n) && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.free[best]
	p.free = append(p.free[:best], p.free[best+1:]...)
	p.bytes -= cap(b)
	return b[:0]
}

// put keeps b for reuse, making room by dropping the oldest buffers (the
// newest are the size of the files written now); b goes to the garbage
// collector if it alone passes maxBytes. The caller must hold the last
// reference to b.
func (p *bufPool) put(b []byte) {
	if cap(b) == 0 || cap(b) > p.maxBytes || p.maxBufs < 1 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) > 0 && (len(p.free) >= p.maxBufs || p.bytes+cap(b) > p.maxBytes) {
		p.bytes -= cap(p.free[0])
		p.free[0] = nil // not kept alive by the slice's array
		p.free = p.free[1:]
	}
	p.free = append(p.free, b)
	p.bytes += cap(b)
}

// bufRef counts the holders of one file's buffer; the last one to let go
// puts it back in the pool.
type bufRef struct {
	pool *bufPool
	buf  []byte
	n    atomic.Int32
}

func (r *bufRef) hold() { r.n.Add(1) }

func (r *bufRef) release() {
	if r.n.Add(-1) == 0 {
		r.pool.put(r.buf)
		r.buf = nil
	}
}

// releaseOnce returns a function that releases r once, however often it
// is called (CommittedFile.Release).
func (r *bufRef) releaseOnce() func() {
	var once sync.Once
	return func() { once.Do(r.release) }
}
