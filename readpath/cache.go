package readpath

import (
	"bytes"
	"container/list"
	"sync"
	"sync/atomic"
)

// Cache keeps whole object files, least recently used first out,
// bounded in bytes. Files are immutable, so entries never go stale.
//
// A file counts by the capacity of its buffer, not its length (held,
// below): a reused buffer may be larger than the file in it, and the
// cache holds all of it. Counting lengths let a 256 MiB cache of small
// files hold 560 MiB of memory (docs/benchmarks.md).
//
// Each file's bytes are a Buf counted by its holders: the cache while
// the file is cached, and each reader that took it with Acquire until it
// lets go (Release), e.g. once the gRPC frames of its answer are written.
// A buffer added with a free function (AddOwned: the batcher's own file
// buffers) is handed back through it once the last holder has let go, and
// may then be reused for another file. Get and GetVerified hand out bytes
// without a hold: they pin the buffer, which then is never handed back
// (the garbage collector takes it), so callers of Get stay safe.
type Cache struct {
	max    int64
	poison atomic.Bool  // overwrite buffers as they are handed back (tests)
	handed atomic.Int64 // buffers handed back through their free function

	mu    sync.Mutex // protects size, order, items
	size  int64
	order *list.List // of *cacheItem, front = most recent
	items map[string]*list.Element
}

type cacheItem struct {
	key string
	buf *Buf
}

// Buf is one cached file's bytes and the count of their holders.
type Buf struct {
	data     []byte
	verified bool // the whole file's checksums held when it was read (AddVerified)
	refs     atomic.Int32
	pinned   atomic.Bool  // handed out without a hold (Get): never handed back
	mapped   bool         // a mapping of the store's file (AddVerifiedMapped): pinning it would keep it mapped forever
	free     func([]byte) // called once the last holder lets go (nil: none)
	cache    *Cache       // poison switch and handed-back count
}

// Bytes is the file; callers must not modify it, nor read it after their
// Release.
func (b *Buf) Bytes() []byte { return b.data }

// Verified reports whether the file was added with AddVerified.
func (b *Buf) Verified() bool { return b.verified }

// Hold adds a holder; only a holder may call it.
func (b *Buf) Hold() { b.refs.Add(1) }

// Release drops one hold; the last one hands the buffer back.
func (b *Buf) Release() {
	n := b.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic("readpath: cached file buffer released more often than held")
	}
	if b.free == nil || b.pinned.Load() {
		return
	}
	if b.cache.poison.Load() {
		for i := range b.data {
			b.data[i] = poisonByte
		}
	}
	b.cache.handed.Add(1)
	b.free(b.data)
}

// poisonByte fills buffers handed back when the cache's Poison is on.
const poisonByte = 0xA5

// NewCache returns an empty cache of at most maxBytes.
func NewCache(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, order: list.New(), items: make(map[string]*list.Element)}
}

// Poison makes every buffer handed back be overwritten first (tests: a
// reader that still uses a buffer handed back then reads garbage, and its
// checks fail, instead of by chance reading the right bytes).
func (c *Cache) Poison() { c.poison.Store(true) }

// HandedBack is the count of buffers handed back through their free
// function (AddOwned).
func (c *Cache) HandedBack() int64 { return c.handed.Load() }

// Acquire returns the cached file with a hold the caller must Release.
func (c *Cache) Acquire(key string) (*Buf, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	b := el.Value.(*cacheItem).buf
	b.Hold() // the cache holds it: refs > 0 here
	return b, true
}

// Has reports whether key is cached, and counts as a use of it (the
// read-ahead asks for files its readers are about to read).
func (c *Cache) Has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if ok {
		c.order.MoveToFront(el)
	}
	return ok
}

// Get returns the cached file; callers must not modify it. The buffer is
// pinned (see Cache).
func (c *Cache) Get(key string) ([]byte, bool) {
	data, _, ok := c.GetVerified(key)
	return data, ok
}

// GetVerified is Get, also reporting whether the file was added with
// AddVerified. A mapped file (AddVerifiedMapped) is returned as a copy.
func (c *Cache) GetVerified(key string) ([]byte, bool, bool) {
	c.mu.Lock()
	el, ok := c.items[key]
	if !ok {
		c.mu.Unlock()
		return nil, false, false
	}
	c.order.MoveToFront(el)
	b := el.Value.(*cacheItem).buf
	b.Hold() // the cache holds it: refs > 0 here
	c.mu.Unlock()
	data := b.PinnedBytes()
	b.Release()
	return data, b.verified, true
}

// Add caches data under key (data must not be modified afterwards).
func (c *Cache) Add(key string, data []byte) { c.add(key, data, false, nil, false, false) }

// AddVerified is Add for a whole file whose checksums (logfile.ReadIndex:
// the body CRC-32C covers every batch) held when it was read: readers of
// its batches may skip their per-batch CRCs.
func (c *Cache) AddVerified(key string, data []byte) { c.add(key, data, true, nil, false, false) }

// AddOwned is Add for a buffer the caller wants back: free(data) is called
// once the file has left the cache and its last reader has let go — at
// once when it is not cached (too large, or already cached).
func (c *Cache) AddOwned(key string, data []byte, free func([]byte)) {
	c.add(key, data, false, free, false, false)
}

// AddVerifiedOwned is AddVerified for a buffer the caller wants back, as
// AddOwned. It returns the file's Buf with a hold for the caller, who pins
// it (Pin) before handing its bytes out without holds, and then releases
// it.
func (c *Cache) AddVerifiedOwned(key string, data []byte, free func([]byte)) *Buf {
	return c.add(key, data, true, free, true, false)
}

// AddVerifiedMapped is AddVerifiedOwned for a mapping of the store's file
// (objectstore.WithMapping): unmap is called once the file has left the
// cache and its last holder has let go. Bytes handed out without holds
// (Get, PinnedBytes) are copies: a pinned mapping would stay mapped for
// the agent's life.
func (c *Cache) AddVerifiedMapped(key string, data []byte, unmap func()) *Buf {
	return c.add(key, data, true, func([]byte) { unmap() }, true, true)
}

// Pin marks the buffer as handed out without holds: it is never handed
// back. Only a holder may call it. A mapped buffer (AddVerifiedMapped)
// then stays mapped for good: use PinnedBytes.
func (b *Buf) Pin() { b.pinned.Store(true) }

// PinnedBytes returns the file's bytes for a holder that hands them out
// without holds: the buffer itself, pinned (Pin), or, for a mapped buffer,
// a copy on the heap. The caller still releases its hold.
func (b *Buf) PinnedBytes() []byte {
	if b.mapped {
		return bytes.Clone(b.data)
	}
	b.Pin()
	return b.data
}

// Mapped reports whether the buffer is a mapping of the store's file.
func (b *Buf) Mapped() bool { return b.mapped }

func (c *Cache) add(key string, data []byte, verified bool, free func([]byte), hold, mapped bool) *Buf {
	b := &Buf{data: data, verified: verified, free: free, cache: c, mapped: mapped}
	b.refs.Store(1) // the cache's hold
	if hold {
		b.refs.Add(1) // the caller's
	}
	var evicted []*Buf
	defer func() {
		for _, e := range evicted {
			e.Release() // outside the lock: free may take the pool's
		}
	}()
	if held(data) > c.max {
		evicted = append(evicted, b)
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		evicted = append(evicted, b)
		return b
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, buf: b})
	c.size += held(data)
	for c.size > c.max {
		el := c.order.Back()
		it := el.Value.(*cacheItem)
		c.order.Remove(el)
		delete(c.items, it.key)
		c.size -= held(it.buf.data)
		evicted = append(evicted, it.buf)
	}
	return b
}

// held is what a cached file counts for: the memory its buffer keeps.
func held(data []byte) int64 { return int64(cap(data)) }

// Size returns the bytes the cached files' buffers hold.
func (c *Cache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
