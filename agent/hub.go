package agent

import (
	"sync"

	"github.com/floe-broker/floe/metadata"
)

type partKey struct {
	topic int64
	part  int32
}

// hub wakes readers waiting for new data in a partition. A waiter takes
// the partition's channel, re-checks the log, then waits on the channel;
// a notice for the partition closes it.
type hub struct {
	mu    sync.Mutex // protects waits
	waits map[partKey]chan struct{}
}

func newHub() *hub { return &hub{waits: make(map[partKey]chan struct{})} }

// wait returns a channel closed at the next notice for the partition.
func (h *hub) wait(topic int64, part int32) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := partKey{topic, part}
	ch, ok := h.waits[k]
	if !ok {
		ch = make(chan struct{})
		h.waits[k] = ch
	}
	return ch
}

// notify wakes the waiters of the partitions in n (all of them if n.All).
func (h *hub) notify(n metadata.Notice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n.All {
		for k, ch := range h.waits {
			close(ch)
			delete(h.waits, k)
		}
		return
	}
	for _, p := range n.Partitions {
		k := partKey{p.TopicID, p.Partition}
		if ch, ok := h.waits[k]; ok {
			close(ch)
			delete(h.waits, k)
		}
	}
}
