package objectstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operation names used as metric labels and by FaultConfig.Operations.
const (
	OpPut    = "put"
	OpGet    = "get"
	OpHead   = "head"
	OpDelete = "delete"
	OpList   = "list"
)

// Result labels of floe_objectstore_requests_total.
const (
	resultOK       = "ok"
	resultNotFound = "not_found"
	resultExists   = "exists"
	resultError    = "error"
)

type storeMetrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	bytesWritten prometheus.Counter
	bytesRead    prometheus.Counter
}

// WithMetrics returns a Store that counts the requests made to s, their
// results, durations and bytes moved, and registers the metrics on reg:
//
//	floe_objectstore_requests_total{operation,result}
//	floe_objectstore_request_duration_seconds{operation}
//	floe_objectstore_bytes_written_total
//	floe_objectstore_bytes_read_total
//
// operation is put, get, head, delete or list; result is ok, not_found,
// exists or error. Wrapping several stores with one registry shares (and
// sums into) the same collectors. A nil reg registers nothing.
func WithMetrics(s Store, reg prometheus.Registerer) Store {
	m := &storeMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_objectstore_requests_total",
			Help: "Object store requests by operation and result.",
		}, []string{"operation", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "floe_objectstore_request_duration_seconds",
			Help:    "Object store request latency by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 17), // 0.5 ms .. 33 s
		}, []string{"operation"}),
		bytesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_objectstore_bytes_written_total",
			Help: "Bytes written by successful object store puts.",
		}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_objectstore_bytes_read_total",
			Help: "Bytes returned by successful object store gets.",
		}),
	}
	m.requests = register(reg, m.requests)
	m.duration = register(reg, m.duration)
	m.bytesWritten = register(reg, m.bytesWritten)
	m.bytesRead = register(reg, m.bytesRead)
	return &metered{inner: s, m: m}
}

// register registers c on reg, or returns the collector already registered
// under the same descriptor.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A clash with a different metric of the same name is a
		// programming error, as with prometheus.MustRegister.
		panic(fmt.Sprintf("objectstore: register metrics: %v", err))
	}
	return c
}

func resultOf(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, ErrNotFound):
		return resultNotFound
	case errors.Is(err, ErrExists):
		return resultExists
	default:
		return resultError
	}
}

type metered struct {
	inner Store
	m     *storeMetrics
}

func (s *metered) observe(op string, start time.Time, err error) {
	s.m.requests.WithLabelValues(op, resultOf(err)).Inc()
	s.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (s *metered) Put(ctx context.Context, key string, data []byte, opts PutOptions) error {
	start := time.Now()
	err := s.inner.Put(ctx, key, data, opts)
	s.observe(OpPut, start, err)
	if err == nil {
		s.m.bytesWritten.Add(float64(len(data)))
	}
	return err
}

func (s *metered) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	start := time.Now()
	data, err := s.inner.Get(ctx, key, off, length)
	s.observe(OpGet, start, err)
	if err == nil {
		s.m.bytesRead.Add(float64(len(data)))
	}
	return data, err
}

func (s *metered) Head(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	info, err := s.inner.Head(ctx, key)
	s.observe(OpHead, start, err)
	return info, err
}

func (s *metered) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.inner.Delete(ctx, key)
	s.observe(OpDelete, start, err)
	return err
}

// List counts one request per call; its duration includes the time spent
// in fn.
func (s *metered) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	start := time.Now()
	err := s.inner.List(ctx, prefix, fn)
	s.observe(OpList, start, err)
	return err
}
