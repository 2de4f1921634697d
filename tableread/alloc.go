package tableread

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Buffers for the Parquet decode of table reads.
//
// A scan decodes each data file into Arrow batches of about 4 MiB and
// copies their rows out (rows.go) before it releases them: the same few
// large buffers are wanted again for the next batch. Arrow's Go allocator
// makes every one afresh, and on this kind of machine a first touch of
// fresh memory runs at a few hundred MB/s (page faults), so the decode's
// large buffers come from a bounded pool of buffers released by earlier
// batches instead.
//
// Every buffer handed out is zeroed, as Arrow's own allocators give them
// (a reused one is cleared in place, on memory already mapped). A buffer
// comes back to the pool only through Free, which Arrow calls once the
// last reference to it is released; the pool keeps at most limit bytes of
// free buffers and drops the rest to the garbage collector.

// allocPool is a memory.Allocator. Buffers below min bytes (poolMin for
// the decode's) come from Arrow's Go allocator.
type allocPool struct {
	small memory.Allocator
	limit int64
	min   int
	// poison, in tests, fills each freed buffer with poisonByte: a reader
	// that used a buffer after releasing it reads garbage and fails.
	poison bool

	mu     sync.Mutex // protects free, held and reused
	free   [64][][]byte
	held   int64 // bytes of the buffers in free
	reused int64 // buffers handed out again (tests)
}

const (
	poolMin    = 64 << 10
	poisonByte = 0xA5
)

func newAllocPool(limit int64) *allocPool {
	return &allocPool{small: memory.NewGoAllocator(), limit: limit, min: poolMin}
}

// poolClass is the class of a buffer of n bytes: the one of capacity
// 1<<poolClass(n), the least power of two at least n.
func poolClass(n int) int { return bits.Len(uint(n - 1)) }

// Allocate returns n zeroed bytes.
func (p *allocPool) Allocate(n int) []byte { return p.allocate(n, 0) }

// allocate returns n bytes, zeroed from the keep-th on (the caller
// writes the first keep).
func (p *allocPool) allocate(n, keep int) []byte {
	if n < p.min {
		return p.small.Allocate(n)
	}
	c := poolClass(n)
	p.mu.Lock()
	var b []byte
	if k := len(p.free[c]); k > 0 {
		b = p.free[c][k-1]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.held -= int64(cap(b))
		p.reused++
	}
	p.mu.Unlock()
	if b == nil {
		return make([]byte, n, 1<<c) // large: page aligned, zeroed by the runtime
	}
	b = b[:n]
	clear(b[min(keep, n):])
	return b
}

// Reallocate returns b grown (or shrunk) to n bytes, its first
// min(len(b), n) bytes kept and the rest zeroed.
func (p *allocPool) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		old := len(b)
		b = b[:n]
		if n > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.allocate(n, len(b)) // n > cap(b) >= len(b)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free takes b back: its caller reads and writes it no more.
func (p *allocPool) Free(b []byte) {
	c := cap(b)
	if c < p.min || c&(c-1) != 0 {
		return // not one of the pool's classes: the garbage collector's
	}
	b = b[:c]
	if p.poison {
		for i := range b {
			b[i] = poisonByte
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held+int64(c) > p.limit {
		return
	}
	k := poolClass(c)
	p.free[k] = append(p.free[k], b)
	p.held += int64(c)
}

// stats is the bytes of free buffers the pool keeps and the buffers it
// has handed out again (tests).
func (p *allocPool) stats() (held, reused int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, p.reused
}

// unzeroed is p for the Parquet page reader's own buffers (the stream,
// decompression and page buffers of decode.go), which it writes over
// before it reads them: a reused buffer is handed out as it was left
// (poisoned in tests), not cleared again. Arrow arrays, whose builders
// count on zeroed memory, never get one of these.
type unzeroed struct{ p *allocPool }

func (u unzeroed) Allocate(n int) []byte { return u.p.allocate(n, n) }

func (u unzeroed) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := u.p.allocate(n, n)
	copy(nb, b)
	u.p.Free(b)
	return nb
}

func (u unzeroed) Free(b []byte) { u.p.Free(b) }

// pageAllocator is the allocator of the Parquet page reader's buffers:
// mem, unzeroed when it is the pool.
func pageAllocator(mem memory.Allocator) memory.Allocator {
	if p, ok := mem.(*allocPool); ok {
		return unzeroed{p}
	}
	return mem
}
