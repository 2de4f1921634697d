package agent

import (
	"bytes"
	"sync"

	"github.com/floe-broker/floe/readpath"
)

// holds are the read cache's file buffers that one read of stored batches
// references (readRangeHeld): its answer points into them until gRPC has
// written it, then the holds are released and a buffer nobody else holds
// may be reused (the batcher's file-buffer pool). A nil *holds pins what
// it reads instead (readpath.Cache.Get): never reused, always safe.
//
// A read from the topic's table (readTable) hands its rebuilt batches'
// buffer to h the same way (own): it goes back to the table reader's
// pool on release, and is left to the garbage collector when there is no
// h to hold it.
type holds struct {
	mu    sync.Mutex // protects bufs, frees and done (a read's files are read in parallel)
	bufs  []*readpath.Buf
	frees []func() // hand back buffers owned by the read (own)
	done  bool     // released: nothing may be added
}

// own adds free, which hands back a buffer the read's answer may
// reference, to h: called on release. With a nil or released h, free is
// never called (the buffer stays valid, the garbage collector's).
func (h *holds) own(free func()) {
	if h == nil || free == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done {
		h.frees = append(h.frees, free)
	}
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

// adopt adds b, held by the caller, to h (nil b: nothing to hold) and
// returns data, b's bytes; with a nil or released h the buffer is pinned
// instead, and what it returns is b's pinned bytes (a copy for a mapped
// buffer: readpath.Buf.PinnedBytes).
func (h *holds) adopt(b *readpath.Buf, data []byte) []byte {
	if b == nil {
		return data
	}
	if h != nil {
		h.mu.Lock()
		if !h.done {
			h.bufs = append(h.bufs, b)
			h.mu.Unlock()
			return data
		}
		h.mu.Unlock()
	}
	data = b.PinnedBytes()
	b.Release()
	return data
}

// release lets go of every buffer held; calls after the first do nothing.
func (h *holds) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	bufs, frees := h.bufs, h.frees
	h.bufs, h.frees, h.done = nil, nil, true
	h.mu.Unlock()
	for _, b := range bufs {
		b.Release()
	}
	for _, free := range frees {
		free()
	}
}

// keepOut ends a read for a caller that keeps no holds (readRange): the
// batches out[idx] read through h's buffers stay valid for good — the
// buffers pinned, or, for a mapped buffer (readpath.Buf.Mapped), only the
// batches copied out of it (pinning would keep the mapping for the
// agent's life, copying the whole file would cost a file per read) — and
// h lets go.
func (h *holds) keepOut(out [][]byte, idx []int) {
	h.mu.Lock()
	bufs := h.bufs
	h.bufs, h.frees, h.done = nil, nil, true // owned buffers are never handed back
	h.mu.Unlock()
	mapped := false
	for _, b := range bufs {
		if b.Mapped() {
			mapped = true
		} else {
			b.Pin()
		}
	}
	if mapped {
		for _, i := range idx {
			out[i] = bytes.Clone(out[i])
		}
	}
	for _, b := range bufs {
		b.Release()
	}
}
