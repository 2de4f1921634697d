package batcher

import "testing"

// The pool hands out the smallest idle buffer that fits (else a fresh
// one), keeps at most maxBufs buffers and maxBytes bytes, and makes room
// by dropping its oldest buffers.
func TestBufPoolBounds(t *testing.T) {
	p := newBufPool(2, 120)
	if b := p.get(1); cap(b) < 1 || len(b) != 0 || p.reused != 0 {
		t.Fatalf("an empty pool: get(1) = len %d cap %d, reused %d; want a fresh empty buffer", len(b), cap(b), p.reused)
	}
	p.put(make([]byte, 5, 30))
	p.put(make([]byte, 0, 40))
	if b := p.get(50); cap(b) < 50 || p.reused != 0 || p.bytes != 70 {
		t.Fatalf("get(50) = cap %d (reused %d, pool %d bytes), want a fresh buffer and the pool as it was", cap(b), p.reused, p.bytes)
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
	if b := p.get(63); cap(b) != 70 || p.bytes != 0 || p.reused != 2 {
		t.Fatalf("get(63) = cap %d (pool %d bytes, reused %d), want 70, an empty pool, 2 reused", cap(b), p.bytes, p.reused)
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
// gets the smallest that fits, or a fresh one.
func TestBufPoolFitsSmallFiles(t *testing.T) {
	p := newBufPool(4, 20<<20)
	p.put(make([]byte, 0, 8<<20))
	if b := p.get(100 << 10); cap(b) == 8<<20 || p.reused != 0 {
		t.Fatalf("get(100 KiB) = cap %d, want a fresh buffer (the idle 8 MiB wastes more than a quarter)", cap(b))
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

// TestBufferCapAndFits: a fresh buffer is the file rounded up by less than
// an eighth of it (a 256 KiB step at most), so that a file a little larger
// than the last can reuse its buffer; a buffer fits a file if it wastes at
// most an eighth of it plus that step; a fresh buffer always fits its file.
func TestBufferCapAndFits(t *testing.T) {
	for _, n := range []int{1, 7, 100, 4095, 100 << 10, 1<<20 + 3, 2 << 20, 8<<20 + 1, 64 << 20} {
		c := BufferCap(n)
		if c < n || c-n >= max(1, min(n/8+1, 256<<10)) {
			t.Errorf("BufferCap(%d) = %d, want n rounded up by less than min(n/8, 256 KiB)", n, c)
		}
		if !BufferFits(c, n) {
			t.Errorf("BufferFits(BufferCap(%d) = %d, %d) = false", n, c, n)
		}
	}
	for _, tc := range []struct {
		c, n int
		want bool
	}{
		{1000, 1001, false},               // no room
		{1000, 1000, true},                // exact
		{1 << 20, 900 << 10, true},        // 1 MiB for 900 KiB: 13.8% of n, within n/8 + 64 KiB
		{1 << 20, 800 << 10, false},       // 28% of n
		{8 << 20, 100 << 10, false},       // a large buffer for a small file
		{8<<20 + 256<<10, 15 << 19, true}, // 8.25 MiB for 7.5 MiB
		{8 << 20, 6 << 20, false},
	} {
		if got := BufferFits(tc.c, tc.n); got != tc.want {
			t.Errorf("BufferFits(%d, %d) = %v, want %v", tc.c, tc.n, got, tc.want)
		}
	}
	// Files varying by a few percent reuse one another's buffers.
	p := newBufPool(4, 64<<20)
	p.put(p.get(1_000_000))
	if b := p.get(1_030_000); p.reused != 1 {
		t.Errorf("a file 3%% larger than the last did not reuse its buffer (cap %d)", cap(b))
	}
}
