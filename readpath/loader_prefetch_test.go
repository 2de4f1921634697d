package readpath

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// testConfig is the agent's default read settings.
func testConfig() Config {
	return Config{CacheBytes: 256 << 20, CacheFileMaxBytes: 16 << 20, LoadTimeout: 30 * time.Second,
		MaxLoadingBytes: 64 << 20, MaxLoadWait: 2 * time.Second, ReadaheadBytes: 64 << 20}
}

// A read-ahead load never queues for room in the loading bound: with the
// bound in use it gives way at once (before, it waited at the head of the
// FIFO semaphore and every reader's load behind it ran into MaxLoadWait
// and ResourceExhausted), and a reader that joined it loads the file
// itself once there is room.
func TestPrefetchGivesWayToReaders(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemory()
	w := logfile.NewWriter(1 << 10)
	b, err := kbatch.Encode([]kbatch.Record{{Key: []byte("k"), Value: []byte("v")}}, kbatch.DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(1, 0, b); err != nil {
		t.Fatal(err)
	}
	file := w.Finish()
	if err := store.Put(ctx, "f", file, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxLoadingBytes = int64(len(file))
	cfg.MaxLoadWait = 5 * time.Second
	l := NewLoader(store, NewCache(1<<20), cfg)
	defer l.Close()

	// Readers hold the whole bound: the prefetch ends at once, skipped.
	if err := l.mem.Acquire(ctx, cfg.MaxLoadingBytes); err != nil {
		t.Fatal(err)
	}
	if !l.prefetch("f", int64(len(file))) {
		t.Fatal("prefetch not started")
	}
	l.mu.Lock()
	ld := l.loads["f"]
	l.mu.Unlock()
	if ld != nil {
		select {
		case <-ld.done:
			if !errors.Is(ld.err, errPrefetchSkipped) {
				t.Fatalf("prefetch with the bound in use: %v, want errPrefetchSkipped", ld.err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("prefetch waited for room in the loading bound")
		}
	}
	if _, ok := l.cache.Get("f"); ok {
		t.Fatal("a skipped prefetch cached the file")
	}
	// A reader joining a prefetch that gives way still gets the file once
	// the bound frees.
	go func() {
		time.Sleep(50 * time.Millisecond)
		l.mem.Release(cfg.MaxLoadingBytes)
	}()
	data, verified, err := l.File(ctx, "f", int64(len(file)))
	if err != nil || !verified || len(data) != len(file) {
		t.Fatalf("reader after the prefetch gave way: %d bytes, verified %v, %v", len(data), verified, err)
	}
}
