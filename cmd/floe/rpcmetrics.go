package main

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// rpcMetrics count every gRPC call the server answers, by method and code,
// and time the unary ones (Fetch, Produce, topic and group calls): the
// request rates and latencies of the API, whatever the handler.
type rpcMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRPCMetrics(reg prometheus.Registerer) *rpcMetrics {
	m := &rpcMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_rpc_requests_total",
			Help: "gRPC calls answered (streams when they end), by method (Service/Method) and gRPC code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "floe_rpc_duration_seconds",
			Help:    "Latency of unary gRPC calls (Fetch, Produce, ...) by method (Service/Method).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 17), // 0.5 ms .. 33 s
		}, []string{"method"}),
	}
	reg.MustRegister(m.calls, m.duration)
	return m
}

// options returns the server options installing the metrics.
func (m *rpcMetrics) options() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(m.unary), grpc.ChainStreamInterceptor(m.stream)}
}

// methodLabel is "LogService/Fetch" for "/floe.v1.LogService/Fetch".
func methodLabel(full string) string {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndex(full[:max(strings.Index(full, "/"), 0)], "."); i >= 0 {
		return full[i+1:]
	}
	return full
}

func (m *rpcMetrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	method := methodLabel(info.FullMethod)
	m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	m.calls.WithLabelValues(method, status.Code(err).String()).Inc()
	return resp, err
}

func (m *rpcMetrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	err := h(srv, ss)
	m.calls.WithLabelValues(methodLabel(info.FullMethod), status.Code(err).String()).Inc()
	return err
}
