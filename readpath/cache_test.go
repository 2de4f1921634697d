package readpath

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
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

// TestCacheHoldsOwnedBuffers: an owned buffer is handed back once it has
// left the cache and its last holder let go — never before, exactly once;
// a pinned one (Get) never; one not cached at once.
func TestCacheHoldsOwnedBuffers(t *testing.T) {
	c := NewCache(10)
	freed := map[string]int{}
	own := func(key string, n int) {
		c.AddOwned(key, make([]byte, n), func([]byte) { freed[key]++ })
	}
	own("a", 4)
	b, ok := c.Acquire("a")
	if !ok {
		t.Fatal("a not cached")
	}
	own("b", 4)
	own("c", 4) // evicts a, still held
	if c.Has("a") || freed["a"] != 0 {
		t.Fatalf("a cached %v, freed %d times while held", c.Has("a"), freed["a"])
	}
	b.Release()
	if freed["a"] != 1 {
		t.Fatalf("a freed %d times after its last release, want 1", freed["a"])
	}
	if _, ok := c.Get("b"); !ok {
		t.Fatal("b not cached")
	}
	own("d", 4)
	own("e", 4) // evicts b (pinned) and c
	if freed["b"] != 0 || freed["c"] != 1 {
		t.Fatalf("pinned b freed %d times, c %d; want 0 and 1", freed["b"], freed["c"])
	}
	own("big", 11) // larger than the cache
	own("d", 2)    // already cached
	if freed["big"] != 1 || freed["d"] != 1 {
		t.Fatalf("uncached buffers freed %d and %d times, want 1 and 1", freed["big"], freed["d"])
	}
	if got := c.HandedBack(); got != 4 {
		t.Fatalf("HandedBack %d, want 4", got)
	}
}

// TestCacheReleaseRace: readers acquire, check and release files while
// writers add new ones (evicting the old) and reuse every buffer handed
// back for a new file, as the batcher's pool does; freed buffers are
// poisoned. A reader must never see a file's bytes change while it holds
// it, and every buffer comes back exactly once. Run with -race.
func TestCacheReleaseRace(t *testing.T) {
	const (
		size    = 512
		files   = 400
		readers = 4
	)
	c := NewCache(4 * size)
	c.Poison()
	var (
		mu   sync.Mutex // protects pool
		pool [][]byte
		back atomic.Int64
	)
	fill := func(i int) byte { return byte(i%250 + 1) }
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, readers)
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i = (i + 1) % files {
				select {
				case <-stop:
					return
				default:
				}
				b, ok := c.Acquire(fmt.Sprint(i))
				if !ok {
					continue
				}
				want := bytes.Repeat([]byte{fill(i)}, size)
				if !bytes.Equal(b.Bytes(), want) {
					errs <- fmt.Errorf("file %d changed while held", i)
					b.Release()
					return
				}
				b.Release()
			}
		}()
	}
	for i := 0; i < files; i++ {
		mu.Lock()
		var buf []byte
		if n := len(pool); n > 0 {
			buf, pool = pool[n-1], pool[:n-1]
		} else {
			buf = make([]byte, size)
		}
		mu.Unlock()
		for j := range buf {
			buf[j] = fill(i)
		}
		c.AddOwned(fmt.Sprint(i), buf, func(b []byte) {
			back.Add(1)
			mu.Lock()
			pool = append(pool, b)
			mu.Unlock()
		})
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if got := back.Load(); got != files-4 {
		t.Fatalf("%d buffers handed back, want %d (all but the 4 cached)", got, files-4)
	}
}

// TestCacheCountsBufferCapacity: a file counts by the capacity of its
// buffer, which the cache holds whole, not by its length: small files in
// large reused buffers (the batcher's pool) must not let the cache hold
// more memory than its bound.
func TestCacheCountsBufferCapacity(t *testing.T) {
	const max = 1000
	c := NewCache(max)
	for i := range 10 {
		c.Add(fmt.Sprintf("f%d", i), make([]byte, 10, 300)) // 10 bytes in a 300-byte buffer
	}
	if got := c.Size(); got != 3*300 {
		t.Errorf("Size() = %d after ten 10-byte files in 300-byte buffers, want %d (three buffers)", got, 3*300)
	}
	var held int
	for i := range 10 {
		if data, ok := c.Get(fmt.Sprintf("f%d", i)); ok {
			held += cap(data)
		}
	}
	if held > max {
		t.Errorf("the cached files' buffers hold %d bytes, past the bound %d", held, max)
	}
	c.Add("big", make([]byte, 1, max+1))
	if _, ok := c.Get("big"); ok {
		t.Error("a 1-byte file in a buffer larger than the cache was cached")
	}
}
