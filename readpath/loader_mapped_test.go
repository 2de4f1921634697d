package readpath

import (
	"bytes"
	"context"
	"testing"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// mappedFile puts a log file of more than objectstore.MinMappedBytes into
// a directory store under key and returns its bytes.
func mappedFile(t *testing.T, store objectstore.Store, key string) []byte {
	t.Helper()
	w := logfile.NewWriter(1 << 20)
	for i := range 8 {
		b, err := kbatch.Encode([]kbatch.Record{{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{byte(i)}, 64<<10)}}, kbatch.DefaultEncodeOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Append(1, int32(i), b); err != nil {
			t.Fatal(err)
		}
	}
	file := w.Finish()
	if len(file) < objectstore.MinMappedBytes {
		t.Fatalf("file of %d bytes, under the mapping minimum", len(file))
	}
	if err := store.Put(context.Background(), key, file, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return file
}

// A whole-file load from the directory store caches a mapping of the file
// (no read into a pool buffer); readers that keep bytes without holds
// (File, Get) get copies, so that the mapping is still given back (unmapped)
// once the file leaves the cache and its holders let go — pinned, it would
// stay mapped for the agent's life.
func TestLoaderMapsDirFiles(t *testing.T) {
	ctx := context.Background()
	store, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := mappedFile(t, store, "f")
	other := mappedFile(t, store, "g")
	cache := NewCache(int64(len(file)) + int64(len(other))/2) // room for one
	l := NewLoader(store, cache, testConfig())
	defer l.Close()

	data, verified, b, err := l.FileHeld(ctx, "f", int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if b == nil || !b.Mapped() || !verified || !bytes.Equal(data, file) {
		t.Fatalf("load: buf %v, mapped %v, verified %v, equal %v; want a verified mapping of the file", b != nil, b != nil && b.Mapped(), verified, bytes.Equal(data, file))
	}
	if l.pool.reused.Load() != 0 || len(l.pool.free) != 0 {
		t.Fatal("a mapped load took a pool buffer")
	}
	kept, _, err := l.File(ctx, "f", int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := cache.Get("f")
	if !ok {
		t.Fatal("f not cached")
	}
	for name, c := range map[string][]byte{"File": kept, "Cache.Get": got} {
		if !bytes.Equal(c, file) || &c[0] == &data[0] {
			t.Fatalf("%s: equal %v, the mapping itself %v; want a copy", name, bytes.Equal(c, file), &c[0] == &data[0])
		}
	}
	if _, _, err := l.File(ctx, "g", int64(len(other))); err != nil { // evicts f
		t.Fatal(err)
	}
	if cache.Has("f") || cache.HandedBack() != 0 {
		t.Fatalf("f cached %v, handed back %d while held", cache.Has("f"), cache.HandedBack())
	}
	b.Release()
	if cache.HandedBack() != 1 {
		t.Fatalf("handed back %d after the last hold of the evicted mapping, want 1 (unmapped)", cache.HandedBack())
	}
	if !bytes.Equal(kept, file) || !bytes.Equal(got, file) {
		t.Fatal("copies changed after the unmapping")
	}
}
