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
// bytes. A buffer serves a file only if it is not much larger (BufferFits): the
// file's buffer then lives on in the read cache, which holds all of it,
// and a pool that handed its largest buffers to every file kept the
// cache's memory at the size of the largest files ever written (at linger
// 20 ms: 560 MiB of buffers behind 256 MiB of files, docs/benchmarks.md).
type bufPool struct {
	maxBufs  int
	maxBytes int
	m        *Metrics // counts gets by source (nil: none)

	mu     sync.Mutex // protects free, bytes and reused
	free   [][]byte   // oldest first
	bytes  int
	reused int // gets served by an idle buffer
}

func newBufPool(maxBufs, maxBytes int) *bufPool {
	return &bufPool{maxBufs: maxBufs, maxBytes: maxBytes}
}

// BufferCap is the capacity of a fresh buffer for a file of n bytes: n
// rounded up to a multiple of its step (bufferStep), so that the files of
// about the same size that follow can reuse it.
func BufferCap(n int) int {
	step := bufferStep(n)
	return (n + step - 1) / step * step
}

// BufferFits reports whether a buffer of capacity c may hold a file of n
// bytes: it has room and wastes at most an eighth of n plus n's step, a
// quarter of n at most. The batcher's file buffers and the agent's loaded
// files (package readpath) follow this rule: the read cache counts a file
// by its buffer's capacity.
func BufferFits(c, n int) bool { return c >= n && c-n <= n/8+bufferStep(n) }

// bufferStep is the largest power of two at most n/8, 256 KiB at most (1
// at least).
func bufferStep(n int) int {
	step := 256 << 10
	for step > 1 && step > n/8 {
		step /= 2
	}
	return step
}

// get returns an empty buffer with room for n bytes: the smallest idle
// one that fits, else a fresh one of BufferCap(n).
func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if BufferFits(cap(b), n) && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		p.m.fileBuffer(false)
		return make([]byte, 0, BufferCap(n))
	}
	p.m.fileBuffer(true)
	b := p.free[best]
	p.free = append(p.free[:best], p.free[best+1:]...)
	p.bytes -= cap(b)
	p.reused++
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
