package batcher_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// poolEnv is a batcher whose OnCommit hook keeps every committed file's
// data and, when release is set, gives the buffer back at once.
type poolEnv struct {
	b     *batcher.Batcher
	mem   *objectstore.Memory
	store *countingStore
	topic metadata.Topic

	mu    sync.Mutex
	files []batcher.CommittedFile
}

func newPoolEnv(t *testing.T, cfg batcher.Config, release bool) *poolEnv {
	t.Helper()
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	e := &poolEnv{mem: objectstore.NewMemory()}
	e.store = &countingStore{Store: e.mem}
	if e.topic, err = meta.CreateTopic(ctx, metadata.TopicSpec{Name: "pool", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	e.b, err = batcher.New(cfg, e.store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) {
		e.mu.Lock()
		e.files = append(e.files, f)
		e.mu.Unlock()
		if release {
			f.Release()
			f.Release() // a second call does nothing
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.b.Close(context.Background()) })
	return e
}

// flush produces one batch per partition in a file of its own and returns
// the error of the first.
func (e *poolEnv) flush(t *testing.T, tag string) error {
	t.Helper()
	var pend []*batcher.Pending
	for p := int32(0); p < 2; p++ {
		pd, err := e.b.Append(context.Background(), e.topic.ID, p, batch(t, 20, tag))
		if err != nil {
			t.Fatal(err)
		}
		pend = append(pend, pd)
	}
	e.b.Flush()
	var first error
	for _, pd := range pend {
		if _, err := pd.Wait(context.Background()); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// checkFiles checks that every committed file's Data still holds the
// object stored under its key, and returns the files.
func (e *poolEnv) checkFiles(t *testing.T) []batcher.CommittedFile {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.files {
		stored, err := e.mem.Get(context.Background(), f.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := logfile.ReadIndex(stored); err != nil {
			t.Fatalf("stored file %s: %v", f.Key, err)
		}
	}
	return append([]batcher.CommittedFile(nil), e.files...)
}

func same(a, b []byte) bool { return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0] }

// A file buffer the hook released serves a later file, and each stored
// file is intact.
func TestFileBufferReusedAfterRelease(t *testing.T) {
	e := newPoolEnv(t, fastConfig(), true)
	for i := range 3 {
		if err := e.flush(t, string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	files := e.checkFiles(t)
	if len(files) != 3 {
		t.Fatalf("%d files committed, want 3", len(files))
	}
	if !same(files[0].Data, files[1].Data) && !same(files[0].Data, files[2].Data) && !same(files[1].Data, files[2].Data) {
		t.Fatal("no file buffer was reused after its release")
	}
}

// A buffer the hook keeps (no Release, as the read cache does) is never
// reused: every committed file's Data stays as stored.
func TestFileBufferHeldIsNotReused(t *testing.T) {
	e := newPoolEnv(t, fastConfig(), false)
	for i := range 4 {
		if err := e.flush(t, string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	files := e.checkFiles(t)
	for i, f := range files {
		stored, err := e.mem.Get(context.Background(), f.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stored, f.Data) {
			t.Fatalf("file %d's Data changed after its commit: its buffer was reused while held", i)
		}
		for _, g := range files[:i] {
			if same(f.Data, g.Data) {
				t.Fatalf("file %d shares a buffer with an earlier, held file", i)
			}
		}
	}
}

// A file whose upload missed its deadline is failed, but its PUT may
// still be reading the buffer: the buffer is not reused until the store
// returns.
func TestFileBufferNotReusedDuringUpload(t *testing.T) {
	cfg := fastConfig()
	cfg.UploadTimeout = 100 * time.Millisecond
	e := newPoolEnv(t, cfg, true)
	stuck := &stuckStore{Store: e.mem, release: make(chan struct{}), reading: make(chan []byte, 1)}
	t.Cleanup(func() { close(stuck.release) }) // before the batcher's Close waits for the PUT
	e.store.Store = stuck
	var fe *batcher.FlushError
	if err := e.flush(t, "stuck"); !errors.As(err, &fe) || fe.Stage != batcher.StageUpload {
		t.Fatalf("first file: %v, want an upload failure", err)
	}
	held := <-stuck.reading // still inside Put
	if err := e.flush(t, "next"); err != nil {
		t.Fatal(err)
	}
	files := e.checkFiles(t)
	if len(files) != 1 {
		t.Fatalf("%d files committed, want 1", len(files))
	}
	if same(files[0].Data, held) {
		t.Fatal("a buffer was reused while its PUT was still running")
	}
}

// stuckStore's first Put ignores its context until release closes,
// announcing the data it holds on reading.
type stuckStore struct {
	objectstore.Store
	once    sync.Once
	release chan struct{}
	reading chan []byte
}

func (s *stuckStore) Put(ctx context.Context, key string, data []byte, o objectstore.PutOptions) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		s.reading <- data
		<-s.release
		return errors.New("stuck store: gave up")
	}
	return s.Store.Put(ctx, key, data, o)
}

// A released buffer serves only files it fits: after a large file, the
// small ones that follow are not laid out in its buffer (the read cache
// would hold all of it for each), so every committed file's Data wastes
// at most a quarter of its length (batcher.BufferFits; and the one index
// entry the layout reserves room for beyond the file).
func TestFileBufferFitsTheFile(t *testing.T) {
	e := newPoolEnv(t, fastConfig(), true)
	for i, records := range []int{5000, 20, 20, 20} {
		pd, err := e.b.Append(context.Background(), e.topic.ID, 0, batch(t, records, string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		e.b.Flush()
		if _, err := pd.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	files := e.checkFiles(t)
	if len(files) != 4 {
		t.Fatalf("%d files committed, want 4", len(files))
	}
	for i, f := range files {
		if n := len(f.Data); cap(f.Data) > n+n/4+4+logfile.EntrySize {
			t.Errorf("file %d: %d bytes in a buffer of %d", i, n, cap(f.Data))
		}
	}
}
