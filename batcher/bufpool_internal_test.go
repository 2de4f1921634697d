package batcher

import "testing"

// The pool hands out the smallest buffer that fits (room for the file,
// at most an eighth more), keeps at most maxBufs buffers and maxBytes
// bytes, and makes room by dropping its oldest buffers.
func TestBufPoolBounds(t *testing.T) {
	p := newBufPool(2, 120)
	if b := p.get(1); b != nil {
		t.Fatal("an empty pool returned a buffer")
	}
	p.put(make([]byte, 5, 30))
	p.put(make([]byte, 0, 40))
	if b := p.get(50); b != nil {
		t.Fatalf("get(50) = cap %d, want none", cap(b))
	}
	p.put(make([]byte, 0, 50)) // full by count: the 30, oldest, goes
	if p.bytes != 90 || len(p.free) != 2 || cap(p.free[0]) != 40 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 2 (40 first), 90", len(p.free), p.bytes)
	}
	p.put(make([]byte, 0, 121)) // larger than maxBytes: dropped
	if p.bytes != 90 {
		t.Fatalf("pool holds %d bytes, want 90", p.bytes)
	}
	p.put(make([]byte, 0, 70)) // full by count: the 40 goes
	if p.bytes != 120 || len(p.free) != 2 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 2, 120 (50 and 70)", len(p.free), p.bytes)
	}
	b := p.get(45)
	if cap(b) != 50 || len(b) != 0 {
		t.Fatalf("get(45) = len %d cap %d, want an empty 50", len(b), cap(b))
	}
	if b := p.get(63); cap(b) != 70 || p.bytes != 0 {
		t.Fatalf("get(63) = cap %d (pool %d bytes), want 70 and an empty pool", cap(b), p.bytes)
	}
	p = newBufPool(3, 100)
	p.put(make([]byte, 0, 40))
	p.put(make([]byte, 0, 50))
	p.put(make([]byte, 0, 30)) // past maxBytes: the 40, oldest, goes
	if p.bytes != 80 || len(p.free) != 2 || cap(p.free[0]) != 50 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 2 (50 first), 80", len(p.free), p.bytes)
	}
}

// TestBufPoolFitsSmallFiles: a small file does not get a large buffer (it
// would hold all of it in the read cache, counted by its capacity); it
// gets one that fits, the smallest, or none.
func TestBufPoolFitsSmallFiles(t *testing.T) {
	p := newBufPool(4, 20<<20)
	p.put(make([]byte, 0, 8<<20))
	if b := p.get(100 << 10); b != nil {
		t.Fatalf("get(100 KiB) = cap %d, want none (wastes more than an eighth)", cap(b))
	}
	p.put(make([]byte, 0, 112<<10))
	p.put(make([]byte, 0, 110<<10))
	if b := p.get(100 << 10); cap(b) != 110<<10 {
		t.Fatalf("get(100 KiB) = cap %d, want the 110 KiB buffer (the smallest that fits)", cap(b))
	}
	if b := p.get(8<<20 - 1); cap(b) != 8<<20 {
		t.Fatalf("get(8 MiB - 1) = cap %d, want the 8 MiB buffer", cap(b))
	}
}
