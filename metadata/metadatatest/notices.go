package metadatatest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// noticeTimeout bounds how long a commit's notice may take.
const noticeTimeout = 2 * time.Second

// AwaitHighWatermarks reads notices from ch until every partition in want
// has been announced at (at least) its high watermark, or an All notice
// arrives after which check confirms them. It fails t after noticeTimeout.
// Backend tests use it for notices that cross store instances.
func AwaitHighWatermarks(t *testing.T, ch <-chan metadata.Notice, want map[metadata.PartitionNotice]bool, check func() bool) {
	t.Helper()
	pending := map[[2]int64]int64{}
	for p := range want {
		pending[[2]int64{p.TopicID, int64(p.Partition)}] = p.HighWatermark
	}
	timeout := time.After(noticeTimeout)
	for len(pending) > 0 {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("notice channel closed while waiting for %v", pending)
			}
			if n.All && check() {
				return
			}
			for _, p := range n.Partitions {
				k := [2]int64{p.TopicID, int64(p.Partition)}
				if hw, ok := pending[k]; ok && p.HighWatermark >= hw {
					delete(pending, k)
				}
			}
		case <-timeout:
			t.Fatalf("no notice within %v for %v", noticeTimeout, pending)
		}
	}
}

func testNotices(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "news", 3)
	sub, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch, err := s.Notices(sub)
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	other, cancelOther := context.WithCancel(ctx(t))
	defer cancelOther()
	ch2, err := s.Notices(other)
	if err != nil {
		t.Fatalf("second Notices: %v", err)
	}
	commit(t, s, file(key(), plain(tp.ID, 0, 3), plain(tp.ID, 2, 1), plain(tp.ID, 0, 2)))
	check := func() bool { return hw(t, s, tp.ID, 0) == 5 && hw(t, s, tp.ID, 2) == 1 }
	want := map[metadata.PartitionNotice]bool{
		{TopicID: tp.ID, Partition: 0, HighWatermark: 5}: true,
		{TopicID: tp.ID, Partition: 2, HighWatermark: 1}: true,
	}
	AwaitHighWatermarks(t, ch, want, check)
	AwaitHighWatermarks(t, ch2, want, check)

	// Ending the context closes that channel only.
	cancel()
	closedWithin(t, ch, noticeTimeout)
	commit(t, s, file(key(), plain(tp.ID, 1, 4)))
	AwaitHighWatermarks(t, ch2, map[metadata.PartitionNotice]bool{{TopicID: tp.ID, Partition: 1, HighWatermark: 4}: true},
		func() bool { return hw(t, s, tp.ID, 1) == 4 })

	if _, err := s.Notices(sub); err == nil {
		t.Error("Notices with an ended context succeeded")
	}
}

// closedWithin fails unless ch is closed within d (notices may come first).
func closedWithin(t *testing.T, ch <-chan metadata.Notice, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("notice channel not closed within %v", d)
		}
	}
}

// testNoticesOverflow commits while a subscriber does not read: commits
// must not block, and the subscriber must still learn where things are.
func testNoticesOverflow(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "flood", 1)
	ch, err := s.Notices(ctx(t))
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	const commits = 200
	start := time.Now()
	for range commits {
		commit(t, s, file(key(), plain(tp.ID, 0, 1)))
	}
	t.Logf("%d commits with a stalled subscriber took %v", commits, time.Since(start))
	AwaitHighWatermarks(t, ch, map[metadata.PartitionNotice]bool{{TopicID: tp.ID, Partition: 0, HighWatermark: commits}: true},
		func() bool { return hw(t, s, tp.ID, 0) == commits })
}

func testInitProducer(t *testing.T, s metadata.Store) {
	c := ctx(t)
	seen := map[int64]bool{}
	var mu sync.Mutex
	add := func(id int64, epoch int16, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil || id < 0 || epoch != 0 {
			t.Errorf("InitProducer = %d, %d, %v; want a new id, epoch 0", id, epoch, err)
			return
		}
		if seen[id] {
			t.Errorf("InitProducer returned id %d twice", id)
		}
		seen[id] = true
	}
	for range 20 {
		add(s.InitProducer(c))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				add(s.InitProducer(c))
			}
		}()
	}
	wg.Wait()
	if len(seen) != 100 {
		t.Errorf("%d distinct ids, want 100", len(seen))
	}
}

func testClosed(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "closing", 1)
	ch, err := s.Notices(ctx(t))
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	closedWithin(t, ch, noticeTimeout)
	c := ctx(t)
	if _, err := s.CreateTopic(c, metadata.TopicSpec{Name: "late", Partitions: 1}); !errors.Is(err, metadata.ErrClosed) {
		t.Errorf("CreateTopic after Close = %v, want ErrClosed", err)
	}
	if _, err := s.CommitFile(c, file(key(), plain(tp.ID, 0, 1))); !errors.Is(err, metadata.ErrClosed) {
		t.Errorf("CommitFile after Close = %v, want ErrClosed", err)
	}
	if _, _, err := s.FindBatches(c, tp.ID, 0, 0, 1); !errors.Is(err, metadata.ErrClosed) {
		t.Errorf("FindBatches after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Notices(c); !errors.Is(err, metadata.ErrClosed) {
		t.Errorf("Notices after Close = %v, want ErrClosed", err)
	}
}
