package tableread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
)

// ErrUnavailable marks a table read that could not reach the catalog
// (not opened yet, or down): retriable, never an answer about the data.
var ErrUnavailable = errors.New("tableread: the Iceberg catalog is unavailable")

// Catalog is an open catalog: its tables, and what closes it
// (iceberg.Writer).
type Catalog interface {
	Tables
	Close() error
}

// Lazy is Tables over a catalog opened on first use: an agent whose
// catalog is down (or that reads no table) starts and serves its raw
// reads, and only a read below a raw log start waits for the catalog.
// A failed open is ErrUnavailable and is not tried again for
// RetryInterval (the reads meanwhile get the same error at once).
type Lazy struct {
	open  func(ctx context.Context) (Catalog, error)
	retry time.Duration
	gate  chan struct{} // one open at a time; a waiter leaves on its ctx

	mu       sync.Mutex // protects cat, err, failedAt, closed
	cat      Catalog
	err      error
	failedAt time.Time
	closed   bool
}

// DefaultRetryInterval is how long Lazy waits after a failed open before
// it tries again.
const DefaultRetryInterval = time.Second

// NewLazy returns Tables that open their catalog with open when first
// needed, trying again at most every retry after a failure.
func NewLazy(open func(ctx context.Context) (Catalog, error), retry time.Duration) (*Lazy, error) {
	if open == nil {
		return nil, fmt.Errorf("%w: no catalog opener", ErrInvalidConfig)
	}
	if retry <= 0 {
		return nil, fmt.Errorf("%w: retry interval %v must be positive", ErrInvalidConfig, retry)
	}
	return &Lazy{open: open, retry: retry, gate: make(chan struct{}, 1)}, nil
}

// catalog returns the open catalog, opening it when it is not.
func (l *Lazy) catalog(ctx context.Context) (Catalog, error) {
	if c, err, done := l.current(); done {
		return c, err
	}
	select {
	case l.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.gate }()
	if c, err, done := l.current(); done { // opened (or failed) meanwhile
		return c, err
	}
	c, err := l.open(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err() // the caller gave up: not the catalog's failure
		}
		l.err, l.failedAt = fmt.Errorf("%w: %w", ErrUnavailable, err), time.Now()
		return nil, l.err
	case l.closed:
		_ = c.Close()
		return nil, fmt.Errorf("%w: closed", ErrUnavailable)
	}
	l.cat, l.err = c, nil
	return c, nil
}

// current is the catalog when open, the last failure while it is fresh,
// and done false when an open is due.
func (l *Lazy) current() (Catalog, error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, fmt.Errorf("%w: closed", ErrUnavailable), true
	case l.cat != nil:
		return l.cat, nil, true
	case l.err != nil && time.Since(l.failedAt) < l.retry:
		return nil, l.err, true
	}
	return nil, nil, false
}

// Load loads topic's table from the catalog, opened if need be; a
// failure to open it is ErrUnavailable.
func (l *Lazy) Load(ctx context.Context, topic string) (*table.Table, error) {
	c, err := l.catalog(ctx)
	if err != nil {
		return nil, err
	}
	return c.Load(ctx, topic)
}

// Close closes the catalog if it was opened; later loads fail.
func (l *Lazy) Close() error {
	l.mu.Lock()
	c := l.cat
	l.cat, l.closed = nil, true
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}
