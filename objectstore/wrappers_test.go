package objectstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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
