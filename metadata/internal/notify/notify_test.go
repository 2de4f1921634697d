package notify

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/metadata"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func notice(hw int64) metadata.Notice {
	return metadata.Notice{Partitions: []metadata.PartitionNotice{{TopicID: 1, HighWatermark: hw}}}
}

func TestFanOut(t *testing.T) {
	h := New(4)
	defer h.Close()
	ctx := context.Background()
	a, err := h.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Publish(notice(1))
	h.Publish(notice(2))
	for _, ch := range []<-chan metadata.Notice{a, b} {
		for want := int64(1); want <= 2; want++ {
			if n := <-ch; n.All || n.Partitions[0].HighWatermark != want {
				t.Errorf("got %+v, want high watermark %d", n, want)
			}
		}
	}
}

func TestOverflowMergesIntoAll(t *testing.T) {
	h := New(3)
	defer h.Close()
	ch, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(10) {
		h.Publish(notice(i)) // never blocks
	}
	var got []metadata.Notice
	for len(ch) > 0 {
		got = append(got, <-ch)
	}
	if len(got) == 0 || len(got) > 3 {
		t.Fatalf("got %d notices, want 1 to 3", len(got))
	}
	sawAll := false
	for _, n := range got {
		sawAll = sawAll || n.All
	}
	if !sawAll {
		t.Errorf("lagging subscriber got %+v, want an All notice among them", got)
	}
	h.Publish(notice(99))
	if n := <-ch; n.All || n.Partitions[0].HighWatermark != 99 {
		t.Errorf("after catching up got %+v", n)
	}
}

func TestContextEndClosesOnlyThatChannel(t *testing.T) {
	h := New(0)
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	a, _ := h.Subscribe(ctx)
	b, _ := h.Subscribe(context.Background())
	cancel()
	select {
	case _, ok := <-a:
		if ok {
			t.Fatal("got a notice, want the channel closed")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("channel not closed after its context ended")
	}
	if h.Subscribers() != 1 {
		t.Errorf("%d subscribers, want 1", h.Subscribers())
	}
	h.Publish(notice(5))
	if n := <-b; n.Partitions[0].HighWatermark != 5 {
		t.Errorf("other subscriber got %+v", n)
	}
	if _, err := h.Subscribe(ctx); err == nil {
		t.Error("Subscribe with an ended context succeeded")
	}
}

func TestClose(t *testing.T) {
	h := New(1)
	ch, _ := h.Subscribe(context.Background())
	h.Close()
	h.Close()
	if _, ok := <-ch; ok {
		t.Error("channel open after Close")
	}
	h.Publish(notice(1)) // no subscribers, no panic
	if _, err := h.Subscribe(context.Background()); !errors.Is(err, metadata.ErrClosed) {
		t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
	}
}
