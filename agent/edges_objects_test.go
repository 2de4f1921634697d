package agent_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// longestStore records the longest answer of its Gets.
type longestStore struct {
	objectstore.Store
	mu      sync.Mutex // protects longest
	longest int
}

func (s *longestStore) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	b, err := s.Store.Get(ctx, key, off, length)
	s.mu.Lock()
	s.longest = max(s.longest, len(b))
	s.mu.Unlock()
	return b, err
}

func (s *longestStore) max() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longest
}

// bucket is a writer agent and the stores a second agent (the reader, its
// read cache cold) is started on.
type bucket struct {
	meta   metadata.Store
	mem    *objectstore.Memory
	writer *node
	bcfg   batcher.Config
}

func newBucket(t *testing.T) *bucket {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	mem := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	acfg.PollInterval = 200 * time.Millisecond
	return &bucket{meta: meta, mem: mem, writer: startNode(t, meta, mem, acfg, bcfg), bcfg: bcfg}
}

// reader starts an agent on the bucket whose cache is empty.
func (b *bucket) reader(t *testing.T, store objectstore.Store, mutate func(*agent.Config)) *node {
	acfg := agent.DefaultConfig()
	acfg.PollInterval = 200 * time.Millisecond
	if mutate != nil {
		mutate(&acfg)
	}
	return startNode(t, b.meta, store, acfg, b.bcfg)
}

// keys lists the bucket's objects in the order they were written.
func (b *bucket) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	if err := b.mem.List(context.Background(), "", func(o objectstore.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	return keys
}

// keyOf is the key of the one object holding value (the keys' hex prefix
// spreads them: listing order is not produce order).
func (b *bucket) keyOf(t *testing.T, value string) string {
	t.Helper()
	var found []string
	for _, k := range b.keys(t) {
		if bytes.Contains(b.object(t, k), []byte(value)) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects hold %q, want 1", len(found), value)
	}
	return found[0]
}

func (b *bucket) object(t *testing.T, key string) []byte {
	t.Helper()
	d, err := b.mem.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (b *bucket) put(t *testing.T, key string, d []byte) {
	t.Helper()
	if err := b.mem.Put(context.Background(), key, d, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (b *bucket) produce(t *testing.T, topic string, p int32, ts int64, value string) {
	t.Helper()
	if _, err := b.writer.c.Produce(context.Background(), topic, p, &floev1.Record{Value: []byte(value), TimestampMs: ts}); err != nil {
		t.Fatal(err)
	}
}

// An object longer than the size the metadata records is not read to its
// end: the load reads one byte past the recorded size and answers DataLoss.
// Before, the whole 64 MiB object was read on every Fetch.
func TestLongObjectIsNotReadWhole(t *testing.T) {
	b := newBucket(t)
	if _, err := b.writer.c.CreateTopic(context.Background(), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "t", 0, 1000, "value")
	key := b.keys(t)[0]
	orig := b.object(t, key)
	b.put(t, key, append(bytes.Clone(orig), make([]byte, 64<<20)...))
	store := &longestStore{Store: b.mem}
	r := b.reader(t, store, nil)
	_, err := r.c.Fetch(context.Background(), "t", 0, 0, 1024, 0)
	if code(err) != codes.DataLoss {
		t.Fatalf("fetch from an object 64 MiB longer than recorded: %v, want DataLoss", err)
	}
	if n := store.max(); n > len(orig)+1 {
		t.Fatalf("read %d bytes of an object recorded as %d", n, len(orig))
	}
}

// A file swapped for another of the same size and topic passes its own
// checksums; its footer does not describe the run the metadata names (a
// timestamp, a partition): DataLoss. Before, Fetch served the other file's
// records.
func TestSwappedObjectIsDataLoss(t *testing.T) {
	b := newBucket(t)
	if _, err := b.writer.c.CreateTopic(context.Background(), "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "t", 0, 1000, "aaaa")
	b.produce(t, "t", 0, 2000, "bbbb") // another max timestamp
	b.produce(t, "t", 1, 1000, "cccc") // another partition
	if n := len(b.keys(t)); n != 3 {
		t.Fatalf("%d objects, want 3", n)
	}
	keys := []string{b.keyOf(t, "aaaa"), b.keyOf(t, "bbbb"), b.keyOf(t, "cccc")}
	a, other, part := b.object(t, keys[0]), b.object(t, keys[1]), b.object(t, keys[2])
	if len(a) != len(other) || len(a) != len(part) {
		t.Fatalf("test premise: files of %d, %d and %d bytes", len(a), len(other), len(part))
	}
	for _, swap := range []struct {
		name string
		data []byte
	}{{"max timestamp", other}, {"partition", part}} {
		b.put(t, keys[0], swap.data)
		r := b.reader(t, b.mem, nil)
		resp, err := r.c.Fetch(context.Background(), "t", 0, 0, 1024, 0)
		if code(err) != codes.DataLoss {
			t.Fatalf("%s swapped: %v %v, want DataLoss", swap.name, resp.GetRecords(), err)
		}
	}
	b.put(t, keys[0], a)
	r := b.reader(t, b.mem, nil)
	resp, err := r.c.Fetch(context.Background(), "t", 0, 0, 1024, 0)
	if err != nil || string(resp.GetRecords()[0].GetValue()) != "aaaa" {
		t.Fatalf("the original back: %v %v", resp, err)
	}
}

// A truncated object read by ranges (cache off) is DataLoss, whether the
// object ends inside the batch or before it. Before, the first was
// Internal ("a floe bug") and the second Unavailable.
func TestTruncatedObjectByRangeIsDataLoss(t *testing.T) {
	b := newBucket(t)
	if _, err := b.writer.c.CreateTopic(context.Background(), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "t", 0, 1000, "value")
	key := b.keys(t)[0]
	orig := b.object(t, key)
	for _, n := range []int{30, 4} {
		b.put(t, key, orig[:n])
		r := b.reader(t, b.mem, func(c *agent.Config) { c.CacheBytes = 0 })
		_, err := r.c.Fetch(context.Background(), "t", 0, 0, 1024, 0)
		if code(err) != codes.DataLoss {
			t.Fatalf("object truncated to %d bytes, read by range: %v, want DataLoss", n, err)
		}
	}
}
