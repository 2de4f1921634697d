package readpath

import (
	"bytes"
	"fmt"
	"testing"
)

// TestCacheEvictsLeastRecentlyUsed: the cache never holds more than its
// bound; past it the least recently used files go first (a Get counts as
// a use), and a file larger than the bound is not cached at all.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	const fileSize, max = 100, 350 // room for three files
	c := NewCache(max)
	file := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, fileSize) }
	key := func(i int) string { return fmt.Sprintf("f%d", i) }
	for i := range 3 {
		c.Add(key(i), file(i))
	}
	if got := c.Size(); got != 3*fileSize {
		t.Fatalf("Size() = %d after three files, want %d", got, 3*fileSize)
	}
	if _, ok := c.Get(key(0)); !ok { // f0 is now the most recent; f1 the least
		t.Fatal("f0 missing before the cache was full")
	}
	c.Add(key(3), file(3))
	if _, ok := c.Get(key(1)); ok {
		t.Error("f1, the least recently used, was kept past the bound")
	}
	for _, i := range []int{0, 2, 3} {
		if data, ok := c.Get(key(i)); !ok || !bytes.Equal(data, file(i)) {
			t.Errorf("f%d: %v, want kept", i, ok)
		}
	}
	for i := 4; i < 40; i++ {
		c.Add(key(i), file(i))
		if got := c.Size(); got > max || got != 3*fileSize {
			t.Fatalf("Size() = %d after %d files, want %d (bound %d)", got, i+1, 3*fileSize, max)
		}
	}
	for i := range 37 {
		if _, ok := c.Get(key(i)); ok {
			t.Errorf("f%d kept, want evicted", i)
		}
	}
	c.Add("huge", make([]byte, max+1))
	if _, ok := c.Get("huge"); ok {
		t.Error("a file larger than the cache was cached")
	}
	if got := c.Size(); got != 3*fileSize {
		t.Errorf("Size() = %d after a file larger than the cache, want %d", got, 3*fileSize)
	}
}
