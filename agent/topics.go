package agent

import (
	"context"
	"sync"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// topicCache remembers topic lookups by name for a short TTL.
type topicCache struct {
	meta metadata.Store
	ttl  time.Duration

	mu     sync.Mutex // protects byName
	byName map[string]cachedTopic
}

type cachedTopic struct {
	t       metadata.Topic
	fetched time.Time
}

func newTopicCache(meta metadata.Store, ttl time.Duration) *topicCache {
	return &topicCache{meta: meta, ttl: ttl, byName: make(map[string]cachedTopic)}
}

func (c *topicCache) get(ctx context.Context, name string) (metadata.Topic, error) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return metadata.Topic{}, err
	}
	c.mu.Lock()
	ct, ok := c.byName[name]
	c.mu.Unlock()
	if ok && time.Since(ct.fetched) < c.ttl {
		return ct.t, nil
	}
	d, err := c.meta.DescribeTopic(ctx, name)
	if err != nil {
		c.forget(name)
		return metadata.Topic{}, err
	}
	c.mu.Lock()
	if len(c.byName) > 100000 {
		c.byName = make(map[string]cachedTopic)
	}
	c.byName[name] = cachedTopic{t: d.Topic, fetched: time.Now()}
	c.mu.Unlock()
	return d.Topic, nil
}

func (c *topicCache) forget(name string) {
	c.mu.Lock()
	delete(c.byName, name)
	c.mu.Unlock()
}
