// Package notify fans commit notices out to the subscribers of a metadata
// store (Store.Notices), merging them when a subscriber lags.
package notify

import (
	"context"
	"sync"

	"github.com/floe-broker/floe/metadata"
)

// DefaultBuffer is the channel buffer of each subscriber.
const DefaultBuffer = 64

// Hub delivers every published notice to every subscriber without ever
// blocking the publisher: a subscriber whose buffer is full has its pending
// notices replaced by one notice with All set.
type Hub struct {
	buffer int

	mu     sync.Mutex // protects subs and closed, and serialises sends
	subs   map[*subscriber]struct{}
	closed bool
}

type subscriber struct {
	ch   chan metadata.Notice
	stop func() bool // unregisters the context.AfterFunc
}

// New returns a hub whose subscribers get channels of buffer notices
// (DefaultBuffer if buffer < 1).
func New(buffer int) *Hub {
	if buffer < 1 {
		buffer = DefaultBuffer
	}
	return &Hub{buffer: buffer, subs: make(map[*subscriber]struct{})}
}

// Subscribe returns a channel of notices that is closed when ctx ends or the
// hub is closed. It returns metadata.ErrClosed once the hub is closed.
func (h *Hub) Subscribe(ctx context.Context) (<-chan metadata.Notice, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &subscriber{ch: make(chan metadata.Notice, h.buffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, metadata.ErrClosed
	}
	h.subs[s] = struct{}{}
	s.stop = context.AfterFunc(ctx, func() { h.remove(s) })
	return s.ch, nil
}

// remove unregisters s and closes its channel, once.
func (h *Hub) remove(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
}

// Subscribers returns the number of live subscribers.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Publish hands n to every subscriber without blocking.
func (h *Hub) Publish(n metadata.Notice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- n:
			continue
		default:
		}
		// Full: everything pending collapses into one All notice. Only
		// Publish sends, under mu, so the send below cannot block.
	drain:
		for {
			select {
			case <-s.ch:
			default:
				break drain
			}
		}
		s.ch <- metadata.Notice{All: true}
	}
}

// Close closes every subscriber's channel; later Subscribe calls fail.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		s.stop()
		delete(h.subs, s)
		close(s.ch)
	}
}
