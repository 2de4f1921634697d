package objectstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// ErrInjected is the error (wrapped) that a Faulty store returns for a
// fault it injected. Callers treat it as transient.
var ErrInjected = errors.New("objectstore: injected fault")

// FaultConfig says which faults a Faulty store injects.
type FaultConfig struct {
	// ErrorRate is the probability (0..1) that a call fails with
	// ErrInjected before reaching the inner store.
	ErrorRate float64
	// Latency is added before every affected call (the sleep ends early,
	// with the context's error, if ctx is done).
	Latency time.Duration
	// LostResponseRate is the probability (0..1) that a call reaches the
	// inner store, takes effect there, and still fails with ErrInjected, as
	// when a write is applied but its response is lost.
	LostResponseRate float64
	// Seed seeds the random choices, for reproducible runs.
	Seed int64
	// Operations limits the faults to these operations (OpPut, OpGet,
	// OpHead, OpDelete, OpList); empty means all.
	Operations []string
}

// Faulty is a Store wrapper that injects errors, lost responses and latency
// for tests. Its faults can be changed at run time with Set.
type Faulty struct {
	inner Store

	mu  sync.Mutex // protects cfg and rng
	cfg FaultConfig
	rng *rand.Rand
}

var _ Store = (*Faulty)(nil)

// WithFaults wraps s with fault injection configured by cfg.
func WithFaults(s Store, cfg FaultConfig) *Faulty {
	f := &Faulty{inner: s}
	f.Set(cfg)
	return f
}

// Set replaces the fault configuration and reseeds the random source.
func (f *Faulty) Set(cfg FaultConfig) {
	cfg.Operations = slices.Clone(cfg.Operations)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	f.rng = rand.New(rand.NewSource(cfg.Seed))
}

// Config returns the current fault configuration.
func (f *Faulty) Config() FaultConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := f.cfg
	cfg.Operations = slices.Clone(cfg.Operations)
	return cfg
}

// decide draws the faults for one call of op.
func (f *Faulty) decide(op string) (latency time.Duration, fail, lose bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cfg.Operations) > 0 && !slices.Contains(f.cfg.Operations, op) {
		return 0, false, false
	}
	if f.cfg.ErrorRate > 0 && f.rng.Float64() < f.cfg.ErrorRate {
		fail = true
	} else if f.cfg.LostResponseRate > 0 && f.rng.Float64() < f.cfg.LostResponseRate {
		lose = true
	}
	return f.cfg.Latency, fail, lose
}

// before applies latency and injected failures; lose says whether to drop
// the response of a call that went through.
func (f *Faulty) before(ctx context.Context, op string) (lose bool, err error) {
	latency, fail, lose := f.decide(op)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
	}
	if fail {
		return false, fmt.Errorf("%w: %s failed", ErrInjected, op)
	}
	return lose, nil
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

// List implements Store. With a lost response, fn has seen the whole
// listing and the call still fails.
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
