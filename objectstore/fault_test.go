package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/objtest"
)

func TestFaultyWithoutFaults(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.WithFaults(objectstore.NewMemory(), objectstore.FaultConfig{})
	})
}

func TestFaultyErrorRate(t *testing.T) {
	ctx := t.Context()
	inner := objectstore.NewMemory()
	f := objectstore.WithFaults(inner, objectstore.FaultConfig{ErrorRate: 1})
	err := f.Put(ctx, "k", []byte("x"), objectstore.PutOptions{})
	if !errors.Is(err, objectstore.ErrInjected) {
		t.Fatalf("Put = %v, want ErrInjected", err)
	}
	if inner.Len() != 0 {
		t.Fatalf("an injected error reached the inner store")
	}
	if _, err := f.Get(ctx, "k", 0, -1); !errors.Is(err, objectstore.ErrInjected) {
		t.Errorf("Get = %v, want ErrInjected", err)
	}
	if _, err := f.Head(ctx, "k"); !errors.Is(err, objectstore.ErrInjected) {
		t.Errorf("Head = %v, want ErrInjected", err)
	}
	if err := f.Delete(ctx, "k"); !errors.Is(err, objectstore.ErrInjected) {
		t.Errorf("Delete = %v, want ErrInjected", err)
	}
	if err := f.List(ctx, "", func(objectstore.ObjectInfo) error { return nil }); !errors.Is(err, objectstore.ErrInjected) {
		t.Errorf("List = %v, want ErrInjected", err)
	}

	// Faults limited to puts leave gets alone.
	f.Set(objectstore.FaultConfig{ErrorRate: 1, Operations: []string{objectstore.OpPut}})
	if err := inner.Put(ctx, "k", []byte("x"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx, "k", 0, -1); err != nil {
		t.Errorf("Get with put-only faults: %v", err)
	}
	if err := f.Put(ctx, "k2", nil, objectstore.PutOptions{}); !errors.Is(err, objectstore.ErrInjected) {
		t.Errorf("Put with put-only faults = %v, want ErrInjected", err)
	}
	if got := f.Config(); got.ErrorRate != 1 || len(got.Operations) != 1 {
		t.Errorf("Config() = %+v", got)
	}

	// Faults switched off.
	f.Set(objectstore.FaultConfig{})
	if err := f.Put(ctx, "k2", nil, objectstore.PutOptions{}); err != nil {
		t.Errorf("Put without faults: %v", err)
	}
}

func TestFaultyLostResponse(t *testing.T) {
	ctx := t.Context()
	inner := objectstore.NewMemory()
	f := objectstore.WithFaults(inner, objectstore.FaultConfig{LostResponseRate: 1})
	err := f.Put(ctx, "k", []byte("applied"), objectstore.PutOptions{IfAbsent: true})
	if !errors.Is(err, objectstore.ErrInjected) {
		t.Fatalf("Put = %v, want ErrInjected", err)
	}
	got, err := inner.Get(ctx, "k", 0, -1)
	if err != nil || string(got) != "applied" {
		t.Fatalf("the put was not applied to the inner store: %q, %v", got, err)
	}
	if err := f.Delete(ctx, "k"); !errors.Is(err, objectstore.ErrInjected) {
		t.Fatalf("Delete = %v, want ErrInjected", err)
	}
	if _, err := inner.Head(ctx, "k"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("the delete was not applied: %v", err)
	}
	seen := 0
	if err := inner.Put(ctx, "k", nil, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	err = f.List(ctx, "", func(objectstore.ObjectInfo) error { seen++; return nil })
	if !errors.Is(err, objectstore.ErrInjected) || seen != 1 {
		t.Fatalf("List = %v after %d objects, want ErrInjected after 1", err, seen)
	}
}

func TestFaultyRatesAreSeeded(t *testing.T) {
	run := func() (pattern string, failures int) {
		f := objectstore.WithFaults(objectstore.NewMemory(), objectstore.FaultConfig{ErrorRate: 0.3, Seed: 42})
		var b strings.Builder
		for i := range 1000 {
			if err := f.Put(t.Context(), fmt.Sprint(i), nil, objectstore.PutOptions{}); err != nil {
				b.WriteByte('x')
				failures++
			} else {
				b.WriteByte('.')
			}
		}
		return b.String(), failures
	}
	p1, n := run()
	p2, _ := run()
	if p1 != p2 {
		t.Errorf("two runs with the same seed injected different faults")
	}
	if n < 220 || n > 380 {
		t.Errorf("%d failures out of 1000 at rate 0.3", n)
	}
}

func TestFaultyLatency(t *testing.T) {
	f := objectstore.WithFaults(objectstore.NewMemory(), objectstore.FaultConfig{Latency: 50 * time.Millisecond})
	start := time.Now()
	if err := f.Put(t.Context(), "k", nil, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Put took %v, want at least the 50ms latency", d)
	}
	// The sleep respects the context.
	f.Set(objectstore.FaultConfig{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Head(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Head with a short deadline = %v, want DeadlineExceeded", err)
	}
}

// A hung call blocks until its context ends and never reaches the store.
func TestFaultyHang(t *testing.T) {
	inner := objectstore.NewMemory()
	f := objectstore.WithFaults(inner, objectstore.FaultConfig{HangRate: 1, Operations: []string{objectstore.OpPut}})
	// start before the deadline is set, so that the deadline lies at least
	// 50 ms after it (taken after, a loaded machine saw 47.9 ms).
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := f.Put(ctx, "k", []byte("x"), objectstore.PutOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, objectstore.ErrInjected) {
		t.Fatalf("hung Put = %v, want ErrInjected and DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("hung Put returned after %v, before its context ended", d)
	}
	if inner.Len() != 0 {
		t.Fatal("a hung put reached the inner store")
	}
	if _, err := f.Head(t.Context(), "k"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head with put-only faults = %v, want ErrNotFound", err)
	}
}

// Next scripts the faults of the next calls, deterministically, ahead of
// the random ones.
func TestFaultyNext(t *testing.T) {
	ctx := t.Context()
	inner := objectstore.NewMemory()
	f := objectstore.WithFaults(inner, objectstore.FaultConfig{})
	f.Next(objectstore.OpPut, 2, objectstore.FaultError)
	f.Next("", 1, objectstore.FaultLostResponse)
	var got []string
	for i := range 4 {
		err := f.Put(ctx, fmt.Sprint(i), []byte("x"), objectstore.PutOptions{})
		switch _, herr := inner.Head(ctx, fmt.Sprint(i)); {
		case err == nil:
			got = append(got, "ok")
		case herr == nil:
			got = append(got, "lost")
		default:
			got = append(got, "error")
		}
	}
	if fmt.Sprint(got) != "[error error lost ok]" {
		t.Fatalf("puts = %v, want [error error lost ok]", got)
	}
	// A script for puts leaves gets alone; Set drops what is left of it.
	f.Next(objectstore.OpPut, 5, objectstore.FaultHang)
	if _, err := f.Get(ctx, "3", 0, -1); err != nil {
		t.Fatalf("Get with a put script: %v", err)
	}
	f.Set(objectstore.FaultConfig{})
	if err := f.Put(ctx, "4", nil, objectstore.PutOptions{}); err != nil {
		t.Fatalf("Put after Set: %v", err)
	}
}
