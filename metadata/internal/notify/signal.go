package notify

import (
	"context"
	"sync"

	"github.com/floe-broker/floe/metadata"
)

// Signal fans out "something changed" (the ACLs) to subscribers without
// ever blocking the publisher: each subscriber's channel holds one
// pending signal, so signals close together arrive as one.
type Signal struct {
	mu     sync.Mutex // protects subs and closed, and serialises sends
	subs   map[chan struct{}]func() bool
	closed bool
}

// NewSignal returns a signal with no subscribers.
func NewSignal() *Signal { return &Signal{subs: make(map[chan struct{}]func() bool)} }

// Subscribe returns a channel that receives after each Publish, closed
// when ctx ends or the signal is closed (then it returns
// metadata.ErrClosed).
func (s *Signal) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, metadata.ErrClosed
	}
	s.subs[ch] = context.AfterFunc(ctx, func() { s.remove(ch) })
	return ch, nil
}

func (s *Signal) remove(ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[ch]; ok {
		delete(s.subs, ch)
		close(ch)
	}
}

// Publish signals every subscriber without blocking.
func (s *Signal) Publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default: // one is pending already
		}
	}
}

// Close closes every subscriber's channel; later Subscribe calls fail.
func (s *Signal) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for ch, stop := range s.subs {
		stop()
		delete(s.subs, ch)
		close(ch)
	}
}
