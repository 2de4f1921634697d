package agent

import (
	"sync"

	"github.com/floe-broker/floe/readpath"
)

// holds are the read cache's file buffers that one read of stored batches
// references (readRangeHeld): its answer points into them until gRPC has
// written it, then the holds are released and a buffer nobody else holds
// may be reused (the batcher's file-buffer pool). A nil *holds pins what
// it reads instead (readpath.Cache.Get): never reused, always safe.
type holds struct {
	mu   sync.Mutex // protects bufs (a read's files are read in parallel)
	bufs []*readpath.Buf
	done bool // released: nothing may be added
}

// cached returns key's bytes from c, held by h (or pinned when h is nil).
func (h *holds) cached(c *readpath.Cache, key string) (data []byte, verified, ok bool) {
	if h == nil {
		return c.GetVerified(key)
	}
	b, ok := c.Acquire(key)
	if !ok {
		return nil, false, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		// Released already (cannot happen within one read): pin instead.
		b.Release()
		return c.GetVerified(key)
	}
	h.bufs = append(h.bufs, b)
	return b.Bytes(), b.Verified(), true
}

// adopt adds b, held by the caller, to h (nil b: nothing to hold); with
// a nil or released h the buffer is pinned instead.
func (h *holds) adopt(b *readpath.Buf) {
	if b == nil {
		return
	}
	if h != nil {
		h.mu.Lock()
		if !h.done {
			h.bufs = append(h.bufs, b)
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
	}
	b.Pin()
	b.Release()
}

// release lets go of every buffer held; calls after the first do nothing.
func (h *holds) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	bufs := h.bufs
	h.bufs, h.done = nil, true
	h.mu.Unlock()
	for _, b := range bufs {
		b.Release()
	}
}
