package objectstore

// Fault injection lives in this package, not in a test-only one, because
// the tests of several packages (agent, batcher) wrap their stores with it
// and the agent classifies ErrInjected with the other object store
// failures. It does nothing unless a caller wraps a store with WithFaults,
// which only tests do: no command of the floe binary calls it.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// ErrInjected is the error (wrapped) that a Faulty store returns for a fault it
// injected. Callers treat it as transient.
var ErrInjected = errors.New("objectstore: injected fault")

// Fault is one kind of injected fault.
type Fault int

const (
	// FaultNone lets the call through.
	FaultNone Fault = iota
	// FaultError fails the call with ErrInjected before it reaches the inner store.
	FaultError
	// FaultLostResponse lets the call take effect in the inner store and still
	// fails it with ErrInjected, as when a write is applied and its
	// response lost.
	FaultLostResponse
	// FaultHang blocks the call until its context ends, then fails it with the
	// context's error, without reaching the inner store: a hung server.
	FaultHang
)

// FaultConfig says which faults a Faulty store injects at random.
type FaultConfig struct {
	// ErrorRate is the probability (0..1) of a FaultError.
	ErrorRate float64
	// LostResponseRate is the probability (0..1) of a FaultLostResponse.
	LostResponseRate float64
	// HangRate is the probability (0..1) of a FaultHang.
	HangRate float64
	// Latency is added before every affected call (the sleep ends early,
	// with the context's error, if ctx is done).
	Latency time.Duration
	// Seed seeds the random choices, for reproducible runs.
	Seed int64
	// Operations limits the faults to these operations (OpPut,
	// OpGet, OpHead, OpDelete, OpList); empty means all.
	Operations []string
}

// script is a fault for the next n calls of op ("" for any).
type script struct {
	op    string
	n     int
	fault Fault
}

// Faulty is a Store wrapper that injects faults for tests. Its faults
// can be changed at run time with Set and Next.
type Faulty struct {
	inner Store

	mu      sync.Mutex // protects cfg, rng and scripts
	cfg     FaultConfig
	rng     *rand.Rand
	scripts []script
}

var _ Store = (*Faulty)(nil)

// WithFaults wraps s with fault injection configured by cfg.
func WithFaults(s Store, cfg FaultConfig) *Faulty {
	f := &Faulty{inner: s}
	f.Set(cfg)
	return f
}

// Set replaces the random fault configuration, reseeds the random source
// and drops the faults scripted by Next.
func (f *Faulty) Set(cfg FaultConfig) {
	cfg.Operations = slices.Clone(cfg.Operations)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	f.rng = rand.New(rand.NewSource(cfg.Seed))
	f.scripts = nil
}

// Next makes the next n calls of op (OpPut, ...; "" for any
// operation) suffer fault, whatever the random configuration says. Scripts
// queue up: the first one matching a call is used.
func (f *Faulty) Next(op string, n int, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > 0 {
		f.scripts = append(f.scripts, script{op: op, n: n, fault: fault})
	}
}

// Config returns the current random fault configuration.
func (f *Faulty) Config() FaultConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := f.cfg
	cfg.Operations = slices.Clone(cfg.Operations)
	return cfg
}

// decide draws the fault of one call of op.
func (f *Faulty) decide(op string) (time.Duration, Fault) {
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
		return 0, FaultNone
	}
	fault := FaultNone
	switch r := f.rng.Float64(); {
	case r < f.cfg.ErrorRate:
		fault = FaultError
	case r < f.cfg.ErrorRate+f.cfg.LostResponseRate:
		fault = FaultLostResponse
	case r < f.cfg.ErrorRate+f.cfg.LostResponseRate+f.cfg.HangRate:
		fault = FaultHang
	}
	return f.cfg.Latency, fault
}

// before applies latency and the faults that stop a call before the inner
// store; lose says whether to drop the response of a call that went through.
func (f *Faulty) before(ctx context.Context, op string) (lose bool, err error) {
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
	case FaultError:
		return false, fmt.Errorf("%w: %s failed", ErrInjected, op)
	case FaultHang:
		<-ctx.Done()
		return false, fmt.Errorf("%w: %s hung: %w", ErrInjected, op, ctx.Err())
	}
	return fault == FaultLostResponse, nil
}

func lostResponse(op string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %s response lost (operation failed: %v)", ErrInjected, op, err)
	}
	return fmt.Errorf("%w: %s applied but response lost", ErrInjected, op)
}

// Put implements Store.
func (f *Faulty) Put(ctx context.Context, key string, data []byte, opts PutOptions) error {
	lose, err := f.before(ctx, OpPut)
	if err != nil {
		return err
	}
	err = f.inner.Put(ctx, key, data, opts)
	if lose {
		return lostResponse(OpPut, err)
	}
	return err
}

// Get implements Store.
func (f *Faulty) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	lose, err := f.before(ctx, OpGet)
	if err != nil {
		return nil, err
	}
	data, err := f.inner.Get(ctx, key, off, length)
	if lose {
		return nil, lostResponse(OpGet, err)
	}
	return data, err
}

// Head implements Store.
func (f *Faulty) Head(ctx context.Context, key string) (ObjectInfo, error) {
	lose, err := f.before(ctx, OpHead)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.inner.Head(ctx, key)
	if lose {
		return ObjectInfo{}, lostResponse(OpHead, err)
	}
	return info, err
}

// Delete implements Store.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	lose, err := f.before(ctx, OpDelete)
	if err != nil {
		return err
	}
	err = f.inner.Delete(ctx, key)
	if lose {
		return lostResponse(OpDelete, err)
	}
	return err
}

// List implements Store. With a lost response, fn has seen the
// whole listing and the call still fails.
func (f *Faulty) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	lose, err := f.before(ctx, OpList)
	if err != nil {
		return err
	}
	err = f.inner.List(ctx, prefix, fn)
	if lose {
		return lostResponse(OpList, err)
	}
	return err
}
