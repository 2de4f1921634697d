package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/floe-broker/floe/metadata"
)

// topicLookupTimeout bounds one shared DescribeTopic (it runs detached from
// the callers waiting for it).
const topicLookupTimeout = 10 * time.Second

// maxCachedTopics bounds the names the topic cache holds.
const maxCachedTopics = 100000

// topicCache resolves the topic names of requests (produce, fetch,
// subscribe, list offsets) to topics.
//
// A lookup is trusted for the TTL, and past it for as long as vouched says
// so: the agent vouches for a topic the read index tracks while commit
// notices flow, because the index then re-reads that topic every
// IndexPollInterval and, finding it gone, drops it and its cached names
// (dropID). So idle readers (long polls re-sending a fetch by name) cost
// the store no lookups once resolved; a deletion made elsewhere is learnt
// from that poll, or from the first query about the topic answering
// ErrTopicNotFound (the caller then forgets the name).
//
// Concurrent misses of one name share one DescribeTopic (singleflight);
// each caller waits for it only as long as its own context allows.
type topicCache struct {
	meta    metadata.Store
	ttl     time.Duration
	vouched func(topicID int64) bool
	flights singleflight.Group

	mu     sync.Mutex // protects byName and gen
	byName map[string]cachedTopic
	gen    uint64 // bumped by forget and dropID: lookups then in flight are not stored
}

type cachedTopic struct {
	t       metadata.Topic
	fetched time.Time
}

// newTopicCache builds a cache; vouched (nil: never) extends the trust in
// a lookup past ttl.
func newTopicCache(meta metadata.Store, ttl time.Duration, vouched func(topicID int64) bool) *topicCache {
	if vouched == nil {
		vouched = func(int64) bool { return false }
	}
	return &topicCache{meta: meta, ttl: ttl, vouched: vouched, byName: make(map[string]cachedTopic)}
}

func (c *topicCache) get(ctx context.Context, name string) (metadata.Topic, error) {
	return c.resolve(ctx, name, true)
}

// getFresh is get for the produce paths: a lookup is trusted for the TTL
// only, never longer on the index's word, so that a change of the
// topic's config made through another agent (its value.schema, which
// produce checks values against) is seen within the TTL.
func (c *topicCache) getFresh(ctx context.Context, name string) (metadata.Topic, error) {
	return c.resolve(ctx, name, false)
}

// resolve is get; vouch says whether the index's vouching extends the TTL.
func (c *topicCache) resolve(ctx context.Context, name string, vouch bool) (metadata.Topic, error) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return metadata.Topic{}, err
	}
	c.mu.Lock()
	ct, ok := c.byName[name]
	c.mu.Unlock()
	if ok && (time.Since(ct.fetched) < c.ttl || vouch && c.vouched(ct.t.ID)) {
		return ct.t, nil
	}
	if err := ctx.Err(); err != nil {
		return metadata.Topic{}, err
	}
	// The shared lookup must outlive the caller that started it (others
	// may wait for it); it keeps the context's values, not its end.
	detached := context.WithoutCancel(ctx)
	ch := c.flights.DoChan(name, func() (any, error) { return c.lookup(detached, name) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return metadata.Topic{}, r.Err
		}
		return r.Val.(metadata.Topic), nil
	case <-ctx.Done():
		return metadata.Topic{}, ctx.Err()
	}
}

// lookup asks the store and caches the answer, unless the name was
// forgotten meanwhile.
func (c *topicCache) lookup(ctx context.Context, name string) (metadata.Topic, error) {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, topicLookupTimeout)
	defer cancel()
	d, err := c.meta.DescribeTopic(ctx, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.byName, name)
		return metadata.Topic{}, err
	}
	if gen == c.gen {
		if len(c.byName) >= maxCachedTopics {
			c.byName = make(map[string]cachedTopic)
		}
		c.byName[name] = cachedTopic{t: d.Topic, fetched: time.Now()}
	}
	return d.Topic, nil
}

// peek returns name's cached topic, however old.
func (c *topicCache) peek(name string) (metadata.Topic, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.byName[name]
	return ct.t, ok
}

// forgetIfGone forgets name when err says its topic no longer exists.
func (c *topicCache) forgetIfGone(name string, err error) {
	if errors.Is(err, metadata.ErrTopicNotFound) {
		c.forget(name)
	}
}

// forget drops name: the next request naming it looks it up afresh.
func (c *topicCache) forget(name string) {
	c.flights.Forget(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.byName, name)
}

// dropID forgets the names cached for topic id (it no longer exists).
func (c *topicCache) dropID(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for name, ct := range c.byName {
		if ct.t.ID == id {
			delete(c.byName, name)
			c.flights.Forget(name)
		}
	}
}
