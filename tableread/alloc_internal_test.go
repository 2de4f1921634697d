package tableread

import (
	"bytes"
	"testing"
)

func TestPoolClass(t *testing.T) {
	for _, tc := range []struct{ n, class int }{{1, 0}, {2, 1}, {3, 2}, {64 << 10, 16}, {64<<10 + 1, 17}, {4 << 20, 22}} {
		if got := poolClass(tc.n); got != tc.class {
			t.Errorf("poolClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
}

func TestAllocPool(t *testing.T) {
	p := newAllocPool(1 << 20)
	p.poison = true
	small := p.Allocate(100)
	if len(small) != 100 || bytes.Count(small, []byte{0}) != 100 {
		t.Fatalf("small allocation: %d bytes, not zeroed", len(small))
	}
	p.Free(small) // Arrow's own: not kept
	if held, _ := p.stats(); held != 0 {
		t.Fatalf("a small buffer was kept (%d bytes)", held)
	}
	b := p.Allocate(100 << 10)
	if len(b) != 100<<10 || cap(b) != 128<<10 {
		t.Fatalf("allocation of 100 KiB: len %d cap %d, want a 128 KiB class", len(b), cap(b))
	}
	for i := range b {
		b[i] = 7
	}
	p.Free(b)
	if held, _ := p.stats(); held != 128<<10 {
		t.Fatalf("held %d after a free, want 128 KiB", held)
	}
	if b[0] != poisonByte || b[len(b)-1] != poisonByte {
		t.Fatal("a freed buffer was not poisoned")
	}
	c := p.Allocate(70 << 10) // the same class: the freed buffer, cleared
	if held, reused := p.stats(); held != 0 || reused != 1 || &c[0] != &b[0] {
		t.Fatalf("the freed buffer was not reused (held %d, reused %d)", held, reused)
	}
	if bytes.Count(c, []byte{0}) != len(c) {
		t.Fatal("a reused buffer was not zeroed")
	}

	// Reallocate keeps the prefix and zeroes what it adds, in place or not.
	copy(c, "prefix")
	c = c[:10]
	c[8], c[9] = 1, 1
	g := p.Reallocate(90<<10, c)
	if &g[0] != &c[0] || string(g[:6]) != "prefix" || g[10] != 0 || bytes.Count(g[10:], []byte{0}) != len(g)-10 {
		t.Fatal("Reallocate within the capacity did not keep the prefix or zero the rest")
	}
	h := p.Reallocate(300<<10, g)
	if string(h[:6]) != "prefix" || h[8] != 1 || bytes.Count(h[10:], []byte{0}) != len(h)-10 || cap(h) != 512<<10 {
		t.Fatal("Reallocate past the capacity did not copy or zero")
	}
	if held, _ := p.stats(); held != 128<<10 {
		t.Fatalf("the outgrown buffer was not taken back (held %d)", held)
	}

	// The bound: a free past it is dropped.
	p.Free(h) // 512 KiB: 640 KiB held
	p.Free(make([]byte, 512<<10))
	if held, _ := p.stats(); held != 640<<10 {
		t.Fatalf("held %d, want 640 KiB (the third free past the 1 MiB bound dropped)", held)
	}
	p.Free(make([]byte, 100<<10)) // not a power of two: not one of the pool's
	if held, _ := p.stats(); held != 640<<10 {
		t.Fatalf("held %d after freeing a buffer of no class", held)
	}
}
