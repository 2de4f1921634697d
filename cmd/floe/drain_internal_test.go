package main

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestDrainGateRefusesNewCalls: once draining, a new unary call or stream
// is refused with Unavailable (shutting down) before its handler runs.
func TestDrainGateRefusesNewCalls(t *testing.T) {
	d := newDrainGate()
	ran := false
	h := func(context.Context, any) (any, error) { ran = true; return "ok", nil }
	if _, err := d.unary(context.Background(), nil, &grpc.UnaryServerInfo{}, h); err != nil || !ran {
		t.Fatalf("before the drain: %v, ran %v", err, ran)
	}
	d.start()
	ran = false
	_, err := d.unary(context.Background(), nil, &grpc.UnaryServerInfo{}, h)
	if status.Code(err) != codes.Unavailable || ran {
		t.Fatalf("unary while draining: %v, ran %v", err, ran)
	}
	if _, err := d.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}, h); err != nil || !ran {
		t.Fatalf("health check while draining: %v, ran %v (want it answered)", err, ran)
	}
	ran = false
	err = d.stream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/floe.v1.LogService/Subscribe"}, func(any, grpc.ServerStream) error {
		ran = true
		return nil
	})
	if status.Code(err) != codes.Unavailable || ran {
		t.Fatalf("stream while draining: %v, ran %v", err, ran)
	}
}
