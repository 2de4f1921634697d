package agent

import (
	"context"
	"crypto/x509"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/access"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/grpcwire"
)

// AuthServerOptions are the interceptors that enforce authentication and
// authorization on the agent's gRPC services, after GRPCServerOptions'
// (pass them to grpc.NewServer after those). With g off (auth.enabled
// false) they pass every call through.
//
// Each call names its caller by bearer token ("authorization: Bearer
// TOKEN", through v) or by verified client certificate (g's
// CertPrincipal rule); no credential is Unauthenticated. Then the rule of
// authz.go decides: every check must be allowed (else PermissionDenied,
// before the handler runs: nothing read, nothing changed), and list
// answers are filtered to what the principal may describe. Each message
// of a stream is checked as it arrives; a refused produce-stream request
// is answered with PermissionDenied and the stream goes on. gRPC health
// stays open for probes; reflection needs a principal only. topics names
// the topics a group has offsets for (Agent.GroupTopics; a server built
// before its agent passes a func that finds it later).
func AuthServerOptions(g *access.Guard, v access.TokenVerifier, topics GroupTopicsFunc) []grpc.ServerOption {
	z := &authz{topics: topics, g: g, v: v}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(z.unary), grpc.ChainStreamInterceptor(z.stream)}
}

// authz holds the interceptors of AuthServerOptions.
type authz struct {
	topics GroupTopicsFunc
	g      *access.Guard
	v      access.TokenVerifier
}

// GroupTopicsFunc names the topics a group has committed offsets for.
type GroupTopicsFunc func(ctx context.Context, group string) ([]string, error)

const (
	healthService     = "/grpc.health.v1.Health/"
	reflectionService = "/grpc.reflection."
)

// authenticate names ctx's caller: (principal, skip, error); skip means
// the method needs no check at all.
func (z *authz) authenticate(ctx context.Context, method string) (auth.Principal, bool, error) {
	if !z.g.Enabled() || strings.HasPrefix(method, healthService) {
		return auth.Principal{}, true, nil
	}
	var header string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if vs := md.Get("authorization"); len(vs) > 0 {
			header = vs[0]
		}
	}
	p, err := access.Authenticate(ctx, z.v, z.g.Config().CertPrincipal, header, peerCert(ctx))
	switch {
	case err == nil:
		return p, false, nil
	case access.IsUnauthenticated(err):
		return auth.Principal{}, false, status.Error(codes.Unauthenticated, err.Error())
	}
	return auth.Principal{}, false, status.Errorf(codes.Unavailable, "authentication: %v", err)
}

// peerCert is the call's verified client certificate, or nil.
func peerCert(ctx context.Context) *x509.Certificate {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return ti.State.VerifiedChains[0][0]
}

// check refuses, with PermissionDenied, a call acc does not allow p.
func (z *authz) check(ctx context.Context, p auth.Principal, method string, acc rpcAccess) error {
	if acc.deny {
		return status.Errorf(codes.PermissionDenied, "%s: no authorization rule for %s", p, method)
	}
	for _, c := range acc.checks {
		if c.orCluster && z.g.Permits(p, c.op, auth.Cluster()) {
			continue
		}
		if !z.g.Allowed("grpc", p, c.op, c.res) {
			return denied(p, c.op, c.res)
		}
	}
	if acc.readsGroupTopics != "" {
		topics, err := z.topics(ctx, acc.readsGroupTopics)
		if err != nil {
			return err
		}
		for _, t := range topics {
			if !z.g.Allowed("grpc", p, auth.OpRead, auth.Topic(t)) {
				return denied(p, auth.OpRead, auth.Topic(t))
			}
		}
	}
	return nil
}

func denied(p auth.Principal, op auth.Operation, res auth.Resource) error {
	return status.Errorf(codes.PermissionDenied, "%s may not %s %s %q", p, op, res.Type, res.Name)
}

// GroupTopics names the topics group has committed offsets for (a
// GroupTopicsFunc).
func (a *Agent) GroupTopics(ctx context.Context, group string) ([]string, error) {
	resp, err := a.FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: group})
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range resp.GetOffsets() {
		if !seen[o.GetTopic()] {
			seen[o.GetTopic()] = true
			out = append(out, o.GetTopic())
		}
	}
	return out, nil
}

func (z *authz) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	p, skip, err := z.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if skip {
		return handler(ctx, req)
	}
	ctx = access.WithPrincipal(ctx, p)
	if strings.HasPrefix(info.FullMethod, reflectionService) {
		return handler(ctx, req)
	}
	m, _ := req.(proto.Message)
	acc := rpcAccessFor(info.FullMethod, m)
	if err := z.check(ctx, p, info.FullMethod, acc); err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, err
	}
	z.filter(p, acc.filter, resp)
	return resp, nil
}

func (z *authz) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	p, skip, err := z.authenticate(ctx, info.FullMethod)
	if err != nil {
		return err
	}
	if skip {
		return handler(srv, ss)
	}
	ctx = access.WithPrincipal(ctx, p)
	if strings.HasPrefix(info.FullMethod, reflectionService) {
		return handler(srv, &authzStream{ServerStream: ss, ctx: ctx})
	}
	if _, ok := rpcRules[info.FullMethod]; !ok && !strings.HasPrefix(info.FullMethod, adminService) {
		return status.Errorf(codes.PermissionDenied, "%s: no authorization rule for %s", p, info.FullMethod)
	}
	return handler(srv, &authzStream{ServerStream: ss, ctx: ctx, z: z, p: p, method: info.FullMethod})
}

// authzStream checks each message received (z nil: none).
type authzStream struct {
	grpc.ServerStream
	ctx    context.Context
	z      *authz
	p      auth.Principal
	method string
}

func (s *authzStream) Context() context.Context { return s.ctx }

func (s *authzStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil || s.z == nil {
		return err
	}
	if in, ok := m.(*grpcwire.ProduceBatchesIn); ok {
		m = in.ProduceBatchesStreamRequest // checked as the request it carries
	}
	pm, _ := m.(proto.Message)
	err := s.z.check(s.ctx, s.p, s.method, rpcAccessFor(s.method, pm))
	if err == nil {
		return nil
	}
	// A produce stream refuses only that request, by its id.
	re := &refusedError{err: err}
	switch r := m.(type) {
	case *floev1.ProduceStreamRequest:
		re.requestID = r.GetRequestId()
	case *floev1.ProduceBatchesStreamRequest:
		re.requestID = r.GetRequestId()
	}
	return re
}

// filter trims a list answer to what p may describe.
func (z *authz) filter(p auth.Principal, f respFilter, resp any) {
	describes := func(res auth.Resource) bool { return z.g.Permits(p, auth.OpDescribe, res) }
	switch r := resp.(type) {
	case *floev1.ListTopicsResponse:
		if f == filterTopics {
			r.Topics = keep(r.Topics, func(t *floev1.Topic) bool { return describes(auth.Topic(t.GetName())) })
		}
	case *floev1.ListGroupsResponse:
		if f == filterGroups && !describes(auth.Cluster()) {
			r.Groups = keep(r.Groups, func(g *floev1.GroupListing) bool { return describes(auth.Group(g.GetGroup())) })
		}
	case *floev1.FetchOffsetsResponse:
		if f == filterOffsets {
			r.Offsets = keep(r.Offsets, func(o *floev1.CommittedOffset) bool { return describes(auth.Topic(o.GetTopic())) })
		}
	case *floev1.DescribeGroupResponse:
		if f == filterLag {
			r.Partitions = keep(r.Partitions, func(l *floev1.PartitionLag) bool { return describes(auth.Topic(l.GetTopic())) })
		}
	}
}

// keep returns the elements of s f keeps, in place.
func keep[T any](s []T, f func(T) bool) []T {
	out := s[:0]
	for _, v := range s {
		if f(v) {
			out = append(out, v)
		}
	}
	clear(s[len(out):])
	return out
}
