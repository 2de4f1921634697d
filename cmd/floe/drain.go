package main

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// errShuttingDown answers what reaches a draining agent: clients retry it
// on another agent.
var errShuttingDown = status.Error(codes.Unavailable, "floe agent is shutting down: retry on another agent")

// drainGate is the gRPC interceptors of a draining agent. Once start is
// called, new calls are refused with errShuttingDown; streams other than
// ProduceStream (subscriptions) end with it at once; a ProduceStream keeps
// answering the requests it already took (the batcher's close flushes
// them) but drops those that arrive after: their client, unanswered,
// resends them when the stream ends (the server's stop ends it).
type drainGate struct {
	once     sync.Once
	draining chan struct{} // closed by start

	mu      sync.Mutex                          // protects cancels
	cancels map[*drainStream]context.CancelFunc // the running streams other than ProduceStream
}

func newDrainGate() *drainGate {
	return &drainGate{draining: make(chan struct{}), cancels: map[*drainStream]context.CancelFunc{}}
}

// start begins draining: new calls are refused and subscriptions end.
func (d *drainGate) start() {
	d.once.Do(func() {
		close(d.draining)
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, cancel := range d.cancels {
			cancel()
		}
	})
}

func (d *drainGate) isDraining() bool {
	select {
	case <-d.draining:
		return true
	default:
		return false
	}
}

// options returns the server options installing the gate.
func (d *drainGate) options() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(d.unary), grpc.ChainStreamInterceptor(d.stream)}
}

func (d *drainGate) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	// Health checks still answer (NOT_SERVING) while the agent drains.
	if d.isDraining() && !strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") {
		return nil, errShuttingDown
	}
	return h(ctx, req)
}

func (d *drainGate) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if d.isDraining() {
		return errShuttingDown
	}
	if info.FullMethod == floev1.LogService_ProduceStream_FullMethodName {
		return h(srv, &produceDrainStream{ServerStream: ss, gate: d})
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	w := &drainStream{ServerStream: ss, ctx: ctx}
	d.mu.Lock()
	if d.isDraining() {
		d.mu.Unlock()
		return errShuttingDown
	}
	d.cancels[w] = cancel
	d.mu.Unlock()
	err := h(srv, w)
	d.mu.Lock()
	delete(d.cancels, w)
	d.mu.Unlock()
	if d.isDraining() && ss.Context().Err() == nil { // ended by the drain, not by its client
		return errShuttingDown
	}
	return err
}

// drainStream is a stream whose context also ends when the agent drains.
type drainStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *drainStream) Context() context.Context { return s.ctx }

// produceDrainStream drops the requests a ProduceStream receives once the
// agent drains: unanswered, they are resent by the client elsewhere.
type produceDrainStream struct {
	grpc.ServerStream
	gate *drainGate
}

func (s *produceDrainStream) RecvMsg(m any) error {
	for {
		if err := s.ServerStream.RecvMsg(m); err != nil {
			return err
		}
		if !s.gate.isDraining() {
			return nil
		}
	}
}
