package agent

import (
	"bytes"
	"testing"

	"github.com/floe-broker/floe/readpath"
)

// A read without holds (readRange) keeps what it read for good: batches
// of a heap buffer stay where they are, the buffer pinned (never handed
// back); batches of a mapped file are copied out, and the mapping is still
// unmapped once the file leaves the cache — pinned, it would stay mapped
// for the agent's life.
func TestKeepOutCopiesMappedBatches(t *testing.T) {
	c := readpath.NewCache(8)
	mapped, heap := []byte("mmmm"), []byte("hhhh")
	unmapped, freed := 0, 0
	c.AddVerifiedMapped("m", mapped, func() { unmapped++ }).Release()
	c.AddOwned("h", heap, func([]byte) { freed++ })

	h := &holds{}
	var out [][]byte
	for _, key := range []string{"m", "h"} {
		data, _, ok := h.cached(c, key)
		if !ok {
			t.Fatalf("%s not cached", key)
		}
		out = append(out, data[1:3])
	}
	h.keepOut(out, []int{0})
	h2 := &holds{}
	data, _, _ := h2.cached(c, "h")
	out2 := [][]byte{data[1:3]}
	h2.keepOut(out2, []int{0})

	if &out[0][0] == &mapped[1] || !bytes.Equal(out[0], []byte("mm")) {
		t.Fatalf("batch of the mapped file: %q, the mapping itself %v; want a copy", out[0], &out[0][0] == &mapped[1])
	}
	if &out2[0][0] != &heap[1] {
		t.Fatal("batch of a heap buffer was copied; want it kept in place (pinned)")
	}
	c.AddOwned("x", make([]byte, 8), nil) // evicts m and h
	if unmapped != 1 || freed != 0 {
		t.Fatalf("after eviction: unmapped %d times (want 1), pinned heap buffer freed %d times (want 0)", unmapped, freed)
	}
}

// A read's owned buffers (a table read's rebuilt batches: holds.own) go
// back on release, once; never without holds, after release, or for a
// read that keeps what it read (keepOut).
func TestHoldsOwn(t *testing.T) {
	freed := map[string]int{}
	free := func(name string) func() { return func() { freed[name]++ } }
	h := &holds{}
	h.own(free("held"))
	h.own(nil)
	h.release()
	h.release()
	h.own(free("late"))
	h.release()
	var none *holds
	none.own(free("none"))
	none.release()
	k := &holds{}
	k.own(free("kept"))
	k.keepOut(nil, nil)
	k.release()
	if want := map[string]int{"held": 1}; len(freed) != 1 || freed["held"] != 1 {
		t.Fatalf("freed %v, want %v", freed, want)
	}
}
