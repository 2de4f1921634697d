package readpath

import "testing"

// filePoolStep is the largest step a fresh buffer's capacity is rounded
// up by (batcher.BufferCap).
const filePoolStep = 256 << 10

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

// TestFilePoolSmallFilesWasteLittle: a fresh buffer for a small file (a
// low-linger agent's) is rounded up by at most an eighth of it (plus 4
// KiB), not to 256 KiB: the cache counts the buffer, so the rest would be
// room lost to cached files. Large files keep the 256 KiB step.
func TestFilePoolSmallFilesWasteLittle(t *testing.T) {
	p := newFilePool(20 << 20)
	for _, n := range []int{1, 3000, 40 << 10, 100 << 10, 300<<10 + 1, 1<<20 + 7, 2<<20 - 1} {
		if b := p.get(n); len(b) != n || cap(b) > n+n/8+4<<10 {
			t.Errorf("get(%d) = len %d cap %d, want cap at most %d", n, len(b), cap(b), n+n/8+4<<10)
		}
	}
	if b := p.get(8<<20 + 1); cap(b) != 8<<20+filePoolStep {
		t.Errorf("get(8 MiB + 1) = cap %d, want %d", cap(b), 8<<20+filePoolStep)
	}
	a := p.get(100 << 10)
	p.put(a)
	if b := p.get(100<<10 - 100); &b[:1][0] != &a[:1][0] {
		t.Error("a 100 KiB buffer was not reused for a file 100 bytes smaller")
	}
	p.put(make([]byte, 0, 256<<10))
	if b := p.get(100 << 10); cap(b) == 256<<10 {
		t.Error("a 100 KiB file took a 256 KiB buffer")
	}
}
