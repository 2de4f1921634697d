package main

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// lateAgent lets the gRPC server run (health: NOT_SERVING) while the agent
// waits for its stores: floe's services are registered at once and answer
// Unavailable until the agent is set, then go to it. It wraps the
// generated service descriptions, so every method, present and future,
// is covered.
type lateAgent struct {
	ag atomic.Pointer[agent.Agent]
}

var errStarting = status.Error(codes.Unavailable, "agent starting: waiting for its metadata and object stores")

// register adds floe's services to s, bound to whatever agent is set.
func (l *lateAgent) register(s *grpc.Server) {
	s.RegisterService(l.desc(&floev1.TopicService_ServiceDesc), &struct {
		floev1.UnimplementedTopicServiceServer
	}{})
	s.RegisterService(l.desc(&floev1.LogService_ServiceDesc), &struct {
		floev1.UnimplementedLogServiceServer
	}{})
	s.RegisterService(l.desc(&floev1.GroupService_ServiceDesc), &struct {
		floev1.UnimplementedGroupServiceServer
	}{})
	s.RegisterService(l.descOf(&floev1.AdminService_ServiceDesc, func(a *agent.Agent) any { return a.AdminServer() }), &struct {
		floev1.UnimplementedAdminServiceServer
	}{})
}

// set makes the services answer through a.
func (l *lateAgent) set(a *agent.Agent) { l.ag.Store(a) }

// desc returns a copy of d whose handlers call the agent once set.
func (l *lateAgent) desc(d *grpc.ServiceDesc) *grpc.ServiceDesc {
	return l.descOf(d, func(a *agent.Agent) any { return a })
}

// descOf is desc for a service the agent serves through pick(agent).
func (l *lateAgent) descOf(d *grpc.ServiceDesc, pick func(*agent.Agent) any) *grpc.ServiceDesc {
	srv := func() any {
		if a := l.ag.Load(); a != nil {
			return pick(a)
		}
		return nil
	}
	out := *d
	out.Methods = make([]grpc.MethodDesc, len(d.Methods))
	for i, m := range d.Methods {
		h := m.Handler
		out.Methods[i] = grpc.MethodDesc{MethodName: m.MethodName,
			Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				srv := srv()
				if srv == nil {
					return nil, errStarting
				}
				return h(srv, ctx, dec, ic)
			}}
	}
	out.Streams = make([]grpc.StreamDesc, len(d.Streams))
	for i, sd := range d.Streams {
		h := sd.Handler
		sd.Handler = func(_ any, stream grpc.ServerStream) error {
			srv := srv()
			if srv == nil {
				return errStarting
			}
			return h(srv, stream)
		}
		out.Streams[i] = sd
	}
	return &out
}
