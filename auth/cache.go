package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrTooManyACLs: the store holds more ACLs than a cache is allowed to
// keep (CacheConfig.MaxACLs, the setting auth.max_acls).
var ErrTooManyACLs = errors.New("auth: too many ACLs")

// ACLWatcher is implemented by stores that announce ACL changes, from any
// process sharing the store.
type ACLWatcher interface {
	// ACLChanges returns a channel that receives a value after ACLs
	// changed (changes close together arrive as one), until ctx ends or
	// the store closes; the channel is closed then.
	ACLChanges(ctx context.Context) (<-chan struct{}, error)
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	// Superusers are principals ("User:NAME") allowed everything.
	Superusers []string
	// Refresh is the longest a cache goes without reloading the ACLs, for
	// a change whose notification was lost.
	Refresh time.Duration
	// MaxACLs bounds the ACLs a cache holds. A store holding more makes
	// the cache fail closed: only superusers are allowed until it holds
	// MaxACLs or fewer again.
	MaxACLs int
	// Logger receives failed reloads; nil discards.
	Logger *slog.Logger
}

// DefaultCacheConfig returns a refresh period of 30 s and room for 10000
// ACLs.
func DefaultCacheConfig() CacheConfig {
	return CacheConfig{Refresh: 30 * time.Second, MaxACLs: 10000}
}

func (c CacheConfig) validate() error {
	switch {
	case c.Refresh <= 0:
		return fmt.Errorf("%w: cache Refresh %v, want > 0", ErrInvalid, c.Refresh)
	case c.MaxACLs < 1:
		return fmt.Errorf("%w: cache MaxACLs %d, want >= 1", ErrInvalid, c.MaxACLs)
	}
	for _, s := range c.Superusers {
		if _, err := ParsePrincipal(s); err != nil {
			return fmt.Errorf("%w: cache Superusers: %w", ErrInvalid, err)
		}
	}
	return nil
}

// Cache is an Authorizer over a Store's ACLs: it holds them in memory,
// reloads them when the store announces a change (ACLWatcher) and at least
// every Refresh, and answers with Authorize. A reload that fails keeps the
// ACLs it had. One goroutine, stopped by Close, does the reloading.
type Cache struct {
	store Store
	cfg   CacheConfig
	log   *slog.Logger

	mu     sync.RWMutex // protects byType, n and err
	byType map[ResourceType][]ACL
	n      int
	err    error // the last reload's, nil after one that worked

	cancel context.CancelFunc
	done   chan struct{}
}

var _ Authorizer = (*Cache)(nil)

// NewCache loads the ACLs once (an error then is returned) and starts the
// reloading goroutine.
func NewCache(ctx context.Context, s Store, cfg CacheConfig) (*Cache, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Cache{store: s, cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if err := c.Reload(ctx); err != nil && !errors.Is(err, ErrTooManyACLs) {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	var changes <-chan struct{}
	if w, ok := s.(ACLWatcher); ok {
		ch, err := w.ACLChanges(runCtx)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("auth: cache: watch ACL changes: %w", err)
		}
		changes = ch
	}
	go c.run(runCtx, changes)
	return c, nil
}

// run reloads on every change and every Refresh until ctx ends.
func (c *Cache) run(ctx context.Context, changes <-chan struct{}) {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				changes = nil // the store closed: the period alone
				continue
			}
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, c.cfg.Refresh)
		if err := c.Reload(rctx); err != nil && ctx.Err() == nil {
			c.log.Warn("auth: reloading ACLs failed", "err", err)
		}
		cancel()
	}
}

// Reload loads the store's ACLs now.
func (c *Cache) Reload(ctx context.Context) error {
	acls, err := c.store.ListACLs(ctx, ACLFilter{})
	if err != nil {
		err = fmt.Errorf("auth: load ACLs: %w", err)
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		return err
	}
	byType := make(map[ResourceType][]ACL)
	if len(acls) > c.cfg.MaxACLs {
		err = fmt.Errorf("%w: the store holds %d ACLs, more than auth.max_acls (%d); only superusers are allowed",
			ErrTooManyACLs, len(acls), c.cfg.MaxACLs)
		c.log.Error("auth: ACL cache fails closed", "err", err)
		acls = nil
	}
	for _, a := range acls {
		byType[a.Resource] = append(byType[a.Resource], a)
	}
	c.mu.Lock()
	c.byType, c.n, c.err = byType, len(acls), err
	c.mu.Unlock()
	return err
}

// Authorize applies the ACL rule to the cached ACLs of res's type.
func (c *Cache) Authorize(p Principal, op Operation, res Resource) Decision {
	c.mu.RLock()
	acls := c.byType[res.Type]
	c.mu.RUnlock()
	return Authorize(acls, c.cfg.Superusers, p, op, res)
}

// Len returns the number of ACLs held, and the last reload's error.
func (c *Cache) Len() (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.n, c.err
}

// Close stops the reloading goroutine and waits for it.
func (c *Cache) Close() {
	c.cancel()
	<-c.done
}
