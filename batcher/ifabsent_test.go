package batcher_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// squatter writes someone else's object at each key just before the
// batcher's upload of it reaches the store (a key collision, or another
// writer that got there first).
type squatter struct {
	objectstore.Store
	mu   sync.Mutex
	keys []string // the keys squatted, in order
}

var squatterBytes = []byte("someone else's object")

func (s *squatter) Put(ctx context.Context, key string, data []byte, o objectstore.PutOptions) error {
	if err := s.Store.Put(ctx, key, squatterBytes, objectstore.PutOptions{}); err != nil {
		return err
	}
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.Store.Put(ctx, key, data, o)
}

// TestUploadNeverOverwrites: the batcher's upload is if-absent (S3's
// If-None-Match: *): when an object is already at the file's key, the
// upload fails definitely, nothing is committed, and the object there
// keeps its bytes; it is never replaced by a file whose batches are then
// acknowledged. Over the in-memory store and over versitygw with
// PostgreSQL.
func TestUploadNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	for _, backend := range []string{"memory", "versitygw"} {
		t.Run(backend, func(t *testing.T) {
			var meta metadata.Store
			var store objectstore.Store
			switch backend {
			case "memory":
				m, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				meta, store = m, objectstore.NewMemory()
			default:
				m, err := postgres.Open(ctx, testenv.Postgres(t), postgres.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				meta, store = m, realS3(t, nil)
			}
			sq := &squatter{Store: store}
			commits := &countingCommitter{Store: meta}
			b, err := batcher.New(fastConfig(), sq, commits, batcher.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close(context.Background()) })
			topic, err := meta.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Produce(ctx, topic.ID, 0, batch(t, 3, "mine"))
			var fe *batcher.FlushError
			if !errors.As(err, &fe) || fe.Stage != batcher.StageUpload || fe.Ambiguous || !errors.Is(err, objectstore.ErrExists) {
				t.Fatalf("produce over an existing object: %v, want a definite upload FlushError wrapping ErrExists", err)
			}
			if n := commits.commits.Load(); n != 0 {
				t.Fatalf("%d commits of a file whose key was taken", n)
			}
			sq.mu.Lock()
			keys := append([]string(nil), sq.keys...)
			sq.mu.Unlock()
			if len(keys) != 1 {
				t.Fatalf("%d uploads, want 1", len(keys))
			}
			got, err := store.Get(ctx, keys[0], 0, -1)
			if err != nil || !bytes.Equal(got, squatterBytes) {
				t.Fatalf("the object at %s is now %q (%v), want the one that was there", keys[0], got, err)
			}
		})
	}
}
