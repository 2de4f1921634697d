package batcher

import "testing"

// The pool hands out buffers large enough, keeps at most maxBufs buffers
// and maxBytes bytes, and prefers keeping large buffers.
func TestBufPoolBounds(t *testing.T) {
	p := newBufPool(2, 100)
	if b := p.get(1); b != nil {
		t.Fatal("an empty pool returned a buffer")
	}
	p.put(make([]byte, 5, 30))
	p.put(make([]byte, 0, 40))
	if b := p.get(50); b != nil {
		t.Fatalf("get(50) = cap %d, want none", cap(b))
	}
	p.put(make([]byte, 0, 50)) // full by count: replaces the 30
	if p.bytes != 90 || len(p.free) != 2 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 2, 90", len(p.free), p.bytes)
	}
	p.put(make([]byte, 0, 20)) // smaller than all: dropped
	p.put(make([]byte, 0, 70)) // would pass maxBytes even in place of the 40: dropped
	if p.bytes != 90 {
		t.Fatalf("pool holds %d bytes, want 90", p.bytes)
	}
	b := p.get(45)
	if cap(b) != 50 || len(b) != 0 {
		t.Fatalf("get(45) = len %d cap %d, want an empty 50", len(b), cap(b))
	}
	if b := p.get(35); cap(b) != 40 || p.bytes != 0 {
		t.Fatalf("get(35) = cap %d (pool %d bytes), want 40 and an empty pool", cap(b), p.bytes)
	}
}
