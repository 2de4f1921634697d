package readpath

import (
	"container/list"
	"sync"
)

// Cache keeps whole object files, least recently used first out,
// bounded in bytes. Files are immutable, so entries never go stale.
type Cache struct {
	max int64

	mu    sync.Mutex // protects size, order, items
	size  int64
	order *list.List // of *cacheItem, front = most recent
	items map[string]*list.Element
}

type cacheItem struct {
	key      string
	data     []byte
	verified bool // the whole file's checksums held when it was read (AddVerified)
}

// NewCache returns an empty cache of at most maxBytes.
func NewCache(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, order: list.New(), items: make(map[string]*list.Element)}
}

// Get returns the cached file; callers must not modify it.
func (c *Cache) Get(key string) ([]byte, bool) {
	data, _, ok := c.GetVerified(key)
	return data, ok
}

// GetVerified is Get, also reporting whether the file was added with
// AddVerified.
func (c *Cache) GetVerified(key string) ([]byte, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false, false
	}
	c.order.MoveToFront(el)
	it := el.Value.(*cacheItem)
	return it.data, it.verified, true
}

// Add caches data under key (data must not be modified afterwards).
func (c *Cache) Add(key string, data []byte) { c.add(key, data, false) }

// AddVerified is Add for a whole file whose checksums (logfile.ReadIndex:
// the body CRC-32C covers every batch) held when it was read: readers of
// its batches may skip their per-batch CRCs.
func (c *Cache) AddVerified(key string, data []byte) { c.add(key, data, true) }

func (c *Cache) add(key string, data []byte, verified bool) {
	if int64(len(data)) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, data: data, verified: verified})
	c.size += int64(len(data))
	for c.size > c.max {
		el := c.order.Back()
		it := el.Value.(*cacheItem)
		c.order.Remove(el)
		delete(c.items, it.key)
		c.size -= int64(len(it.data))
	}
}

// Size returns the cached bytes.
func (c *Cache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
