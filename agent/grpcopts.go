package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// recvMargin is what a request may take on the wire beyond MaxRequestBytes:
// the topic name, producer fields and stream envelope. Records' protobuf
// framing is already within the budget (RecordOverhead, HeaderOverhead), so
// a request refused by gRPC's receive limit is over the budget too.
const recvMargin = 64 << 10

// sendMargin is what a response may take beyond MaxFetchBytes: the
// protobuf framing of the records (offset, partition and timestamp fields).
const sendMargin = 4 << 20

// MaxRecvMsgBytes is gRPC's receive limit for the agent's requests: above
// MaxRequestBytes by a margin, so that the produce budget check refuses a
// request first, naming the limit.
func (c Config) MaxRecvMsgBytes() int { return c.MaxRequestBytes + recvMargin }

// MaxSendMsgBytes is gRPC's send limit for the agent's responses.
func (c Config) MaxSendMsgBytes() int { return c.MaxFetchBytes + sendMargin }

// GRPCServerOptions are the server options the agent's services need:
//   - receive limit MaxRecvMsgBytes and send limit MaxSendMsgBytes;
//   - a codec that turns a request that does not decode (invalid UTF-8 in a
//     string, malformed protobuf) into InvalidArgument instead of gRPC's
//     Internal;
//   - unary and stream interceptors that give each call a request id
//     (RequestID) and turn failures on the agent's side (Unavailable,
//     Internal, Unknown, DataLoss) into a generic message with the request
//     id, logging the full error once at ERROR with the id and RPC name.
//
// Pass them to grpc.NewServer before any other interceptor options, and
// register the services with Agent.Register (which turns gRPC's own
// message-size refusal into InvalidArgument).
func GRPCServerOptions(cfg Config, log *slog.Logger) []grpc.ServerOption {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &guard{log: log, base: encoding.GetCodecV2(protoenc.Name), undecoded: make(map[any]error)}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgBytes()),
		grpc.MaxSendMsgSize(cfg.MaxSendMsgBytes()),
		grpc.ForceServerCodecV2(g),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	}
}

// guard is the server codec and the interceptors of GRPCServerOptions.
//
// gRPC answers a request its codec cannot decode with Internal, before any
// handler or interceptor runs. So, for floe's own messages, the codec
// records the decode error against the message instead of failing, and the
// interceptor that sees the message next (the unary interceptor, or the
// stream wrapper's RecvMsg, on the same goroutine right after the decode)
// takes it back and refuses the call with InvalidArgument.
type guard struct {
	log  *slog.Logger
	base encoding.CodecV2

	mu        sync.Mutex    // protects undecoded
	undecoded map[any]error // message -> its decode error, until the interceptor takes it
}

// Name is the proto codec's name: the codec speaks plain protobuf.
func (g *guard) Name() string { return protoenc.Name }

func (g *guard) Marshal(v any) (mem.BufferSlice, error) { return g.base.Marshal(v) }

func (g *guard) Unmarshal(data mem.BufferSlice, v any) error {
	err := g.base.Unmarshal(data, v)
	if err == nil || !floeMessage(v) {
		return err
	}
	g.mu.Lock()
	g.undecoded[v] = err
	g.mu.Unlock()
	return nil
}

// floeMessage reports whether v is one of floe's API messages, which only
// pass through the guard's interceptors.
func floeMessage(v any) bool {
	m, ok := v.(proto.Message)
	return ok && strings.HasPrefix(string(m.ProtoReflect().Descriptor().FullName()), "floe.")
}

// decodeError takes back the decode error recorded for m, as InvalidArgument.
func (g *guard) decodeError(m any) error {
	g.mu.Lock()
	err, ok := g.undecoded[m]
	delete(g.undecoded, m)
	g.mu.Unlock()
	if !ok {
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "request does not decode: %v", err)
}

func (g *guard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx = withRequestID(ctx)
	if err := g.decodeError(req); err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, publicError(ctx, g.log, info.FullMethod, "", err)
	}
	return resp, nil
}

func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := withRequestID(ss.Context())
	if err := handler(srv, &guardedStream{ServerStream: ss, ctx: ctx, g: g}); err != nil {
		return publicError(ctx, g.log, info.FullMethod, "", err)
	}
	return nil
}

// guardedStream carries the request id and refuses undecodable messages.
type guardedStream struct {
	grpc.ServerStream
	ctx context.Context
	g   *guard
}

func (s *guardedStream) Context() context.Context { return s.ctx }

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		s.g.decodeError(m) // a failed receive leaves nothing to refuse
		return err
	}
	return s.g.decodeError(m)
}

// sizeChecked returns a copy of desc whose handlers answer gRPC's own
// refusal of a message over the receive limit (ResourceExhausted, which
// means "retry later") with InvalidArgument naming the limit: a request
// that large will never pass.
func sizeChecked(desc *grpc.ServiceDesc, cfg Config) *grpc.ServiceDesc {
	d := *desc
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		h := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			return h(srv, ctx, func(v any) error { return recvError(dec(v), cfg) }, icpt)
		}
		d.Methods[i] = m
	}
	d.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		h := s.Handler
		s.Handler = func(srv any, ss grpc.ServerStream) error { return h(srv, &sizeCheckedStream{ss, cfg}) }
		d.Streams[i] = s
	}
	return &d
}

type sizeCheckedStream struct {
	grpc.ServerStream
	cfg Config
}

func (s *sizeCheckedStream) RecvMsg(m any) error { return recvError(s.ServerStream.RecvMsg(m), s.cfg) }

// recvError turns gRPC's message-size refusal into InvalidArgument.
func recvError(err error, cfg Config) error {
	if status.Code(err) != codes.ResourceExhausted {
		return err
	}
	return statusInfo(codes.InvalidArgument, ReasonRequestTooLarge,
		map[string]string{"max_request_bytes": fmt.Sprint(cfg.MaxRequestBytes)},
		"request over the agent's request limit of %d bytes (%d on the wire): split it (%s)",
		cfg.MaxRequestBytes, cfg.MaxRecvMsgBytes(), status.Convert(err).Message())
}
