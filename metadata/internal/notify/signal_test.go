package notify

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/metadata"
)

func TestSignal(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := NewSignal()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Publish() // never blocks; merges into one pending
	}
	for _, ch := range []<-chan struct{}{a, b} {
		<-ch
		select {
		case <-ch:
			t.Fatal("three signals not merged into one")
		default:
		}
	}
	cancel()
	if _, ok := <-a; ok {
		t.Fatal("channel open after its context ended")
	}
	s.Close()
	if _, ok := <-b; ok {
		t.Fatal("channel open after Close")
	}
	s.Publish()
	if _, err := s.Subscribe(context.Background()); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
}
