package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floe-broker/floe/objectstore"
)

func TestWithPrefixLayout(t *testing.T) {
	ctx := t.Context()
	inner := objectstore.NewMemory()
	if got := objectstore.WithPrefix(inner, ""); got != objectstore.Store(inner) {
		t.Errorf("WithPrefix with an empty prefix did not return the store itself")
	}
	for _, prefix := range []string{"tenant", "tenant/", "tenant//"} {
		s := objectstore.WithPrefix(inner, prefix)
		if err := s.Put(ctx, "v1/k", []byte(prefix), objectstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := inner.Head(ctx, "tenant/v1/k"); err != nil {
			t.Errorf("prefix %q: inner key tenant/v1/k: %v", prefix, err)
		}
		info, err := s.Head(ctx, "v1/k")
		if err != nil || info.Key != "v1/k" {
			t.Errorf("prefix %q: Head = %+v, %v", prefix, info, err)
		}
	}
	if inner.Len() != 1 {
		t.Errorf("inner store holds %d objects, want 1", inner.Len())
	}
	// A prefix that is only a string prefix of another is kept apart.
	if err := inner.Put(ctx, "tenant2/v1/z", nil, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := objectstore.WithPrefix(inner, "tenant").List(ctx, "", func(info objectstore.ObjectInfo) error {
		keys = append(keys, info.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keys) != "[v1/k]" {
		t.Errorf("List = %v, want [v1/k]", keys)
	}
}

func TestWithMetricsCounts(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	s := objectstore.WithMetrics(objectstore.NewMemory(), reg)
	// A second wrapper on the same registry reuses the collectors.
	s2 := objectstore.WithMetrics(objectstore.NewMemory(), reg)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Put(ctx, "a", []byte("12345"), objectstore.PutOptions{IfAbsent: true}))
	if err := s.Put(ctx, "a", []byte("x"), objectstore.PutOptions{IfAbsent: true}); !errors.Is(err, objectstore.ErrExists) {
		t.Fatal(err)
	}
	must(s2.Put(ctx, "b", []byte("123"), objectstore.PutOptions{}))
	if _, err := s.Get(ctx, "a", 1, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "missing", 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a", 99, -1); !errors.Is(err, objectstore.ErrInvalidRange) {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	must(s.Delete(ctx, "a"))
	must(s.List(ctx, "", func(objectstore.ObjectInfo) error { return nil }))

	want := `
# HELP floe_objectstore_requests_total Object store requests by operation and result.
# TYPE floe_objectstore_requests_total counter
floe_objectstore_requests_total{operation="delete",result="ok"} 1
floe_objectstore_requests_total{operation="get",result="error"} 1
floe_objectstore_requests_total{operation="get",result="not_found"} 1
floe_objectstore_requests_total{operation="get",result="ok"} 1
floe_objectstore_requests_total{operation="head",result="ok"} 1
floe_objectstore_requests_total{operation="list",result="ok"} 1
floe_objectstore_requests_total{operation="put",result="exists"} 1
floe_objectstore_requests_total{operation="put",result="ok"} 2
# HELP floe_objectstore_bytes_written_total Bytes written by successful object store puts.
# TYPE floe_objectstore_bytes_written_total counter
floe_objectstore_bytes_written_total 8
# HELP floe_objectstore_bytes_read_total Bytes returned by successful object store gets.
# TYPE floe_objectstore_bytes_read_total counter
floe_objectstore_bytes_read_total 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"floe_objectstore_requests_total", "floe_objectstore_bytes_written_total", "floe_objectstore_bytes_read_total"); err != nil {
		t.Error(err)
	}
	n, err := testutil.GatherAndCount(reg, "floe_objectstore_request_duration_seconds")
	if err != nil || n != 5 {
		t.Errorf("duration histogram series = %d, %v; want 5", n, err)
	}
	// A nil registerer is allowed.
	must(objectstore.WithMetrics(objectstore.NewMemory(), nil).Put(ctx, "k", nil, objectstore.PutOptions{}))
}

func TestWithMetricsNameClashPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_objectstore_bytes_read_total", Help: "clash"}))
	defer func() {
		if recover() == nil {
			t.Error("WithMetrics did not panic on a clashing metric")
		}
	}()
	objectstore.WithMetrics(objectstore.NewMemory(), reg)
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
