package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// heldDescribe answers DescribeTopic with topic id 7 once released,
// counting the calls.
type heldDescribe struct {
	metadata.Store
	calls   atomic.Int64
	started chan struct{} // one send per call
	release chan struct{}
}

func newHeldDescribe() *heldDescribe {
	return &heldDescribe{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (h *heldDescribe) DescribeTopic(ctx context.Context, name string) (metadata.TopicDescription, error) {
	h.calls.Add(1)
	h.started <- struct{}{}
	select {
	case <-h.release:
		return metadata.TopicDescription{Topic: metadata.Topic{ID: 7, Name: name, Partitions: 1}}, nil
	case <-ctx.Done():
		return metadata.TopicDescription{}, ctx.Err()
	}
}

// Concurrent misses of one name make one DescribeTopic; a caller whose
// context ends stops waiting at once while the others get the answer.
func TestTopicMissesShareOneLookup(t *testing.T) {
	store := newHeldDescribe()
	c := newTopicCache(store, time.Hour, nil)
	gone, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { _, err := c.get(gone, "t"); left <- err }()
	<-store.started
	const callers = 20
	var wg sync.WaitGroup
	ids := make(chan int64, callers)
	for range callers {
		wg.Go(func() {
			tp, err := c.get(context.Background(), "t")
			if err != nil {
				t.Error(err)
			}
			ids <- tp.ID
		})
	}
	leave()
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the caller that left got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a caller whose context ended still waits for the lookup")
	}
	time.Sleep(20 * time.Millisecond) // let the callers join the lookup
	close(store.release)
	wg.Wait()
	close(ids)
	for id := range ids {
		if id != 7 {
			t.Fatalf("a caller got topic id %d, want 7", id)
		}
	}
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("%d DescribeTopic for %d concurrent misses, want 1", n, callers+1)
	}
}

// A lookup past its TTL is kept while the topic is vouched for (the read
// index watches it), and made again once it is not, or once the topic was
// found gone (dropID) or forgotten.
func TestTopicTrustedWhileWatched(t *testing.T) {
	store := newHeldDescribe()
	close(store.release)
	var watched atomic.Bool
	watched.Store(true)
	c := newTopicCache(store, time.Millisecond, func(id int64) bool { return id == 7 && watched.Load() })
	ctx := context.Background()
	get := func() {
		t.Helper()
		if _, err := c.get(ctx, "t"); err != nil {
			t.Fatal(err)
		}
	}
	get()
	time.Sleep(5 * time.Millisecond) // past the TTL
	for range 10 {
		get()
	}
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("%d lookups of a watched topic, want 1", n)
	}
	c.dropID(7)
	get()
	if n := store.calls.Load(); n != 2 {
		t.Fatalf("%d lookups after the topic was found gone, want 2", n)
	}
	c.forget("t")
	get()
	if n := store.calls.Load(); n != 3 {
		t.Fatalf("%d lookups after forget, want 3", n)
	}
	watched.Store(false)
	time.Sleep(5 * time.Millisecond)
	get()
	if n := store.calls.Load(); n != 4 {
		t.Fatalf("%d lookups once no longer watched and past the TTL, want 4", n)
	}
}

// A lookup in flight when its name is forgotten (the topic was deleted)
// is not cached: the next request looks the name up again.
func TestTopicForgottenDuringLookupNotCached(t *testing.T) {
	store := newHeldDescribe()
	c := newTopicCache(store, time.Hour, nil)
	done := make(chan error, 1)
	go func() { _, err := c.get(context.Background(), "t"); done <- err }()
	<-store.started
	c.forget("t")
	close(store.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.get(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if n := store.calls.Load(); n != 2 {
		t.Fatalf("%d lookups, want 2 (the one in flight at forget is not cached)", n)
	}
}
