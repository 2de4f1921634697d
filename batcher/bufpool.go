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
// bytes.
type bufPool struct {
	maxBufs  int
	maxBytes int

	mu    sync.Mutex // protects free and bytes
	free  [][]byte
	bytes int
}

func newBufPool(maxBufs, maxBytes int) *bufPool {
	return &bufPool{maxBufs: maxBufs, maxBytes: maxBytes}
}

// get returns an empty buffer with room for n bytes, or nil if the pool
// has none that large.
func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if b := p.free[i]; cap(b) >= n {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.bytes -= cap(b)
			return b[:0]
		}
	}
	return nil
}

// put keeps b for reuse, unless the pool is full (then b goes to the
// garbage collector). The caller must hold the last reference to b.
func (p *bufPool) put(b []byte) {
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) >= p.maxBufs || p.bytes+cap(b) > p.maxBytes {
		// Make room by dropping the smallest if b is larger: large
		// buffers serve every file.
		if len(p.free) == 0 {
			return
		}
		small := 0
		for i, f := range p.free {
			if cap(f) < cap(p.free[small]) {
				small = i
			}
		}
		if cap(p.free[small]) >= cap(b) || p.bytes-cap(p.free[small])+cap(b) > p.maxBytes {
			return
		}
		p.bytes -= cap(p.free[small])
		p.free = append(p.free[:small], p.free[small+1:]...)
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
