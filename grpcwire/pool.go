package grpcwire

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// Pool is a gRPC buffer pool (mem.BufferPool) that does not zero the
// buffers it hands out: gRPC writes every byte of a receive or marshal
// buffer before it reads it, and clearing a reused 4 MiB buffer for each
// message was ~10% of a reading agent's CPU (grpc's default pool clears
// every buffer it reuses). Capacities are powers of two from 256 bytes to
// 16 MiB; larger buffers are allocated and left to the garbage collector.
// Each tier is a sync.Pool, emptied by the garbage collector when idle.
type Pool struct {
	tiers [poolTiers]sync.Pool // tier i holds *[]byte of capacity 1<<(poolMinShift+i)
}

const (
	poolMinShift = 8  // 256 B
	poolMaxShift = 24 // 16 MiB
	poolTiers    = poolMaxShift - poolMinShift + 1
)

var _ mem.BufferPool = (*Pool)(nil)

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{} }

// tier is the tier whose capacity is the least power of two ≥ n, or -1
// for sizes past the largest tier.
func tier(n int) int {
	if n <= 1<<poolMinShift {
		return 0
	}
	s := bits.Len(uint(n - 1))
	if s > poolMaxShift {
		return -1
	}
	return s - poolMinShift
}

// Get returns a buffer of length n whose bytes are not cleared.
func (p *Pool) Get(n int) *[]byte {
	t := tier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b
	}
	if bp, ok := p.tiers[t].Get().(*[]byte); ok {
		*bp = (*bp)[:n]
		return bp
	}
	b := make([]byte, n, 1<<(poolMinShift+t))
	return &b
}

// Put keeps a buffer of Get for reuse; buffers of other capacities are
// left to the garbage collector.
func (p *Pool) Put(bp *[]byte) {
	c := cap(*bp)
	t := tier(c)
	if t < 0 || c != 1<<(poolMinShift+t) {
		return
	}
	*bp = (*bp)[:0]
	p.tiers[t].Put(bp)
}
