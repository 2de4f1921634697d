// Package objfault is a fault-injecting objectstore.Store wrapper for
// tests: injected errors, lost responses (the call takes effect, its answer
// is an error), hung calls (blocked until their context ends) and latency,
// drawn at seeded random rates or scripted for the next N calls. It lives
// outside package objectstore so that the production package holds no
// fault injection.
package objfault

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

// ErrInjected is the error (wrapped) that a Store returns for a fault it
// injected. Callers treat it as transient.
var ErrInjected = errors.New("objfault: injected fault")

// Fault is one kind of injected fault.
type Fault int

const (
	// None lets the call through.
	None Fault = iota
	// Error fails the call with ErrInjected before it reaches the inner store.
	Error
	// LostResponse lets the call take effect in the inner store and still
	// fails it with ErrInjected, as when a write is applied and its
	// response lost.
	LostResponse
	// Hang blocks the call until its context ends, then fails it with the
	// context's error, without reaching the inner store: a hung server.
	Hang
)

// Config says which faults a Store injects at random.
type Config struct {
	// ErrorRate is the probability (0..1) of an Error fault.
	ErrorRate float64
	// LostResponseRate is the probability (0..1) of a LostResponse fault.
	LostResponseRate float64
	// HangRate is the probability (0..1) of a Hang fault.
	HangRate float64
	// Latency is added before every affected call (the sleep ends early,
	// with the context's error, if ctx is done).
	Latency time.Duration
	// Seed seeds the random choices, for reproducible runs.
	Seed int64
	// Operations limits the faults to these operations (objectstore.OpPut,
	// OpGet, OpHead, OpDelete, OpList); empty means all.
	Operations []string
}

// script is a fault for the next n calls of op ("" for any).
type script struct {
	op    string
	n     int
	fault Fault
}

// Store is an objectstore.Store wrapper that injects faults. Its faults
// can be changed at run time with Set and Next.
type Store struct {
	inner objectstore.Store

	mu      sync.Mutex // protects cfg, rng and scripts
	cfg     Config
	rng     *rand.Rand
	scripts []script
}

var _ objectstore.Store = (*Store)(nil)

// New wraps s with fault injection configured by cfg.
func New(s objectstore.Store, cfg Config) *Store {
	f := &Store{inner: s}
	f.Set(cfg)
	return f
}

// Set replaces the random fault configuration, reseeds the random source
// and drops the faults scripted by Next.
func (f *Store) Set(cfg Config) {
	cfg.Operations = slices.Clone(cfg.Operations)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	f.rng = rand.New(rand.NewSource(cfg.Seed))
	f.scripts = nil
}

// Next makes the next n calls of op (objectstore.OpPut, ...; "" for any
// operation) suffer fault, whatever the random configuration says. Scripts
// queue up: the first one matching a call is used.
func (f *Store) Next(op string, n int, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > 0 {
		f.scripts = append(f.scripts, script{op: op, n: n, fault: fault})
	}
}

// Config returns the current random fault configuration.
func (f *Store) Config() Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := f.cfg
	cfg.Operations = slices.Clone(cfg.Operations)
	return cfg
}

// decide draws the fault of one call of op.
func (f *Store) decide(op string) (time.Duration, Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.scripts {
		s := &f.scripts[i]
		if s.op != "" && s.op != op {
			continue
		}
		s.n--
		fault := s.fault
		if s.n == 0 {
			f.scripts = slices.Delete(f.scripts, i, i+1)
		}
		return 0, fault
	}
	if len(f.cfg.Operations) > 0 && !slices.Contains(f.cfg.Operations, op) {
		return 0, None
	}
	fault := None
	switch r := f.rng.Float64(); {
	case r < f.cfg.ErrorRate:
		fault = Error
	case r < f.cfg.ErrorRate+f.cfg.LostResponseRate:
		fault = LostResponse
	case r < f.cfg.ErrorRate+f.cfg.LostResponseRate+f.cfg.HangRate:
		fault = Hang
	}
	return f.cfg.Latency, fault
}

// before applies latency and the faults that stop a call before the inner
// store; lose says whether to drop the response of a call that went through.
func (f *Store) before(ctx context.Context, op string) (lose bool, err error) {
	latency, fault := f.decide(op)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
	}
	switch fault {
	case Error:
		return false, fmt.Errorf("%w: %s failed", ErrInjected, op)
	case Hang:
		<-ctx.Done()
		return false, fmt.Errorf("%w: %s hung: %w", ErrInjected, op, ctx.Err())
	}
	return fault == LostResponse, nil
}

func lostResponse(op string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %s response lost (operation failed: %v)", ErrInjected, op, err)
	}
	return fmt.Errorf("%w: %s applied but response lost", ErrInjected, op)
}

// Put implements objectstore.Store.
func (f *Store) Put(ctx context.Context, key string, data []byte, opts objectstore.PutOptions) error {
	lose, err := f.before(ctx, objectstore.OpPut)
	if err != nil {
		return err
	}
	err = f.inner.Put(ctx, key, data, opts)
	if lose {
		return lostResponse(objectstore.OpPut, err)
	}
	return err
}

// Get implements objectstore.Store.
func (f *Store) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	lose, err := f.before(ctx, objectstore.OpGet)
	if err != nil {
		return nil, err
	}
	data, err := f.inner.Get(ctx, key, off, length)
	if lose {
		return nil, lostResponse(objectstore.OpGet, err)
	}
	return data, err
}

// Head implements objectstore.Store.
func (f *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	lose, err := f.before(ctx, objectstore.OpHead)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := f.inner.Head(ctx, key)
	if lose {
		return objectstore.ObjectInfo{}, lostResponse(objectstore.OpHead, err)
	}
	return info, err
}

// Delete implements objectstore.Store.
func (f *Store) Delete(ctx context.Context, key string) error {
	lose, err := f.before(ctx, objectstore.OpDelete)
	if err != nil {
		return err
	}
	err = f.inner.Delete(ctx, key)
	if lose {
		return lostResponse(objectstore.OpDelete, err)
	}
	return err
}

// List implements objectstore.Store. With a lost response, fn has seen the
// whole listing and the call still fails.
func (f *Store) List(ctx context.Context, prefix string, fn func(objectstore.ObjectInfo) error) error {
	lose, err := f.before(ctx, objectstore.OpList)
	if err != nil {
		return err
	}
	err = f.inner.List(ctx, prefix, fn)
	if lose {
		return lostResponse(objectstore.OpList, err)
	}
	return err
}
