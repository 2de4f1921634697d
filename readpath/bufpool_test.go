package readpath

import "testing"

func TestFilePoolReusesWithinBounds(t *testing.T) {
	p := newFilePool(20 << 20)
	a := p.get(8 << 20)
	if len(a) != 8<<20 || cap(a)%filePoolStep != 0 {
		t.Fatalf("fresh buffer: len %d cap %d", len(a), cap(a))
	}
	p.put(a)
	// A much smaller file does not take it (it would waste most of it).
	if b := p.get(1 << 20); &b[:1][0] == &a[:1][0] {
		t.Fatal("a 1 MiB file took an 8 MiB buffer")
	}
	// A file a little smaller or the same size does.
	b := p.get(8<<20 - 1000)
	if &b[:1][0] != &a[:1][0] || len(b) != 8<<20-1000 {
		t.Fatal("the idle buffer was not reused for a file of about its size")
	}
	if p.reused.Load() != 1 {
		t.Fatalf("reused %d, want 1", p.reused.Load())
	}
	// Idle bytes are bounded: the third 8 MiB buffer is left to the GC.
	p.put(b)
	p.put(make([]byte, 8<<20))
	p.put(make([]byte, 8<<20))
	if p.idle != 16<<20 || len(p.free) != 2 {
		t.Fatalf("idle %d bytes in %d buffers, want 16 MiB in 2", p.idle, len(p.free))
	}
	// No pool (bound 0): always fresh.
	q := newFilePool(0)
	q.put(make([]byte, 1<<20))
	if len(q.free) != 0 {
		t.Fatal("a pool bounded at 0 kept a buffer")
	}
}
