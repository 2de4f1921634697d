package agent

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/grpcwire"
)

// recvMargin is what a request may take on the wire beyond MaxRequestBytes:
// the topic name, producer fields and stream envelope. Records' protobuf
// framing is already within the budget (RecordOverhead, HeaderOverhead), so
// a request longer than MaxRequestBytes+recvMargin on the wire is over the
// budget too, and is refused without being decoded.
const recvMargin = 64 << 10

// sendMargin is what a response may take beyond MaxFetchBytes: the
// protobuf framing of the records (offset, partition and timestamp fields).
const sendMargin = 4 << 20

// maxWireRequest is the longest request the agent decodes; longer ones are
// refused with InvalidArgument naming MaxRequestBytes.
func (c Config) maxWireRequest() int { return c.MaxRequestBytes + recvMargin }

// MaxRecvMsgBytes is gRPC's receive limit for the agent's requests, just
// above the longest request the agent decodes (maxWireRequest): a request
// up to it that is over that is refused by the agent with InvalidArgument
// naming MaxRequestBytes; only a longer one gets gRPC's own
// ResourceExhausted, which gRPC answers by the message's header, before
// reading it. It bounds the memory one request can hold, and is the share
// of the receive budget each stream takes (grpclimits.go). (It was four
// times MaxRequestBytes: 32 streams half-sending 16 MiB held 514 MB.)
func (c Config) MaxRecvMsgBytes() int { return c.maxWireRequest() + recvMargin }

// MaxSendMsgBytes is gRPC's send limit for the agent's responses.
func (c Config) MaxSendMsgBytes() int { return c.MaxFetchBytes + sendMargin }

// grpcWriteBufferSize is what gRPC gathers of a connection's frames before
// one write to the socket (gRPC's default, 32 KiB, made a catch-up read
// one write syscall per 32 KiB). It is taken from a pool while the
// connection writes and given back when it goes idle.
const grpcWriteBufferSize = 256 << 10

// GRPCServerOptions are the server options the agent's services need:
//   - receive limit MaxRecvMsgBytes and send limit MaxSendMsgBytes;
//   - the edge's bounds (grpclimits.go): the receive budget, fixed
//     flow-control windows, keepalive enforcement, idle and age limits
//     (wrap the listener in LimitListener for the connection limit);
//   - the zero-copy codec (grpcwire) with buffers that are not zeroed
//     (grpcwire.Pool, also the transport's), and a 256 KiB write buffer;
//   - a codec that refuses, with InvalidArgument, a request over
//     MaxRequestBytes on the wire (gRPC's refusal would be
//     ResourceExhausted, "retry later") and one that does not decode
//     (invalid UTF-8 in a string, malformed protobuf; gRPC's answer would
//     be Internal);
//   - unary and stream interceptors that give each call a request id
//     (RequestID) and turn failures on the agent's side (Unavailable,
//     Internal, Unknown, DataLoss) into a generic message with the request
//     id, logging the full error once at ERROR with the id and RPC name.
//
// Pass them to grpc.NewServer before any other interceptor options.
func GRPCServerOptions(cfg Config, log *slog.Logger) []grpc.ServerOption {
	return grpcServerOptions(cfg, log, grpcwire.NewPool())
}

// grpcServerOptions is GRPCServerOptions with the buffer pool given.
func grpcServerOptions(cfg Config, log *slog.Logger, pool mem.BufferPool) []grpc.ServerOption {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &guard{log: log, base: grpcwire.NewCodec(pool), pool: pool, cfg: cfg, undecoded: make(map[any]error)}
	return append([]grpc.ServerOption{
		experimental.BufferPool(pool),
		grpc.WriteBufferSize(grpcWriteBufferSize),
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgBytes()),
		grpc.MaxSendMsgSize(cfg.MaxSendMsgBytes()),
		grpc.ForceServerCodecV2(g),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	}, grpcLimitOptions(cfg, newRecvBudget(cfg))...)
}

// guard is the server codec and the interceptors of GRPCServerOptions.
//
// gRPC answers a request its codec cannot decode with Internal, and writes
// that status itself before any handler or interceptor runs. So, for
// floe's own messages, the codec records its refusal against the message
// instead of failing, and the interceptor that sees the message next (the
// unary interceptor, or the stream wrapper's RecvMsg, on the same goroutine
// right after the decode) takes it back and refuses the call with
// InvalidArgument. In a produce stream only that request is refused.
type guard struct {
	log  *slog.Logger
	base encoding.CodecV2
	pool mem.BufferPool // receive buffers, lent to the batcher by ProduceBatchesStream (decodeInto)
	cfg  Config

	mu        sync.Mutex    // protects undecoded
	undecoded map[any]error // message -> its refusal, until the interceptor takes it (at most maxUndecoded)
}

// Name is the proto codec's name: the codec speaks plain protobuf.
func (g *guard) Name() string { return protoenc.Name }

func (g *guard) Marshal(v any) (mem.BufferSlice, error) { return g.base.Marshal(v) }

func (g *guard) Unmarshal(data mem.BufferSlice, v any) error {
	if !floeMessage(v) {
		return g.base.Unmarshal(data, v)
	}
	var refusal error
	if n := data.Len(); n > g.cfg.maxWireRequest() {
		refusal = statusInfo(codes.InvalidArgument, ReasonRequestTooLarge,
			map[string]string{"max_request_bytes": strconv.Itoa(g.cfg.MaxRequestBytes)},
			"request of %d bytes over the agent's request limit of %d bytes: split it", n, g.cfg.MaxRequestBytes)
	} else if err := g.decodeInto(data, v); err != nil {
		refusal = status.Errorf(codes.InvalidArgument, "request does not decode: %v", err)
	} else {
		return nil
	}
	re := &refusedError{err: refusal}
	switch v.(type) {
	case *floev1.ProduceStreamRequest, *floev1.ProduceBatchesStreamRequest, *grpcwire.ProduceBatchesIn:
		// Only this request of the stream is refused, by its id.
		re.requestID = streamRequestID(data)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.undecoded) >= maxUndecoded {
		// Each refusal lives from the decode to the interceptor right
		// after it; this many means an interceptor placed before the
		// guard's ended calls early. Stay bounded: forget them.
		g.log.Error("grpc: refused requests were never taken back; put agent.GRPCServerOptions before other interceptors",
			"refusals", len(g.undecoded))
		clear(g.undecoded)
	}
	g.undecoded[v] = re
	return nil
}

// decodeInto decodes a floe message: a ProduceBatchesIn with its batches
// aliasing the receive buffer (grpcwire.UnmarshalProduceBatches), any
// other through the base codec.
func (g *guard) decodeInto(data mem.BufferSlice, v any) error {
	if in, ok := v.(*grpcwire.ProduceBatchesIn); ok {
		return grpcwire.UnmarshalProduceBatches(data, g.pool, in)
	}
	return g.base.Unmarshal(data, v)
}

// maxUndecoded bounds the refusals waiting for their interceptor (each
// waits microseconds, so only a misordered interceptor chain reaches it).
const maxUndecoded = 4096

// streamRequestID reads field 1 (request_id) of an encoded
// ProduceStreamRequest, or 0.
func streamRequestID(data mem.BufferSlice) uint64 {
	// The id is encoded first by every usual encoder; look at the start only.
	head := make([]byte, min(data.Len(), 16))
	data.CopyTo(head)
	if num, typ, n := protowire.ConsumeTag(head); n > 0 && num == 1 && typ == protowire.VarintType {
		if id, m := protowire.ConsumeVarint(head[n:]); m > 0 {
			return id
		}
	}
	return 0
}

// refusedError is the refusal of one received message that left the stream
// usable; requestID is a ProduceStreamRequest's id.
type refusedError struct {
	err       error
	requestID uint64
}

func (e *refusedError) Error() string              { return e.err.Error() }
func (e *refusedError) Unwrap() error              { return e.err }
func (e *refusedError) GRPCStatus() *status.Status { return status.Convert(e.err) }

// floeMessage reports whether v is one of floe's API messages, which only
// pass through the guard's interceptors.
func floeMessage(v any) bool {
	m, ok := v.(proto.Message)
	return ok && strings.HasPrefix(string(m.ProtoReflect().Descriptor().FullName()), "floe.")
}

// decodeError takes back the refusal recorded for m (a *refusedError).
func (g *guard) decodeError(m any) error {
	g.mu.Lock()
	err, ok := g.undecoded[m]
	delete(g.undecoded, m)
	g.mu.Unlock()
	if !ok {
		return nil
	}
	return err
}

func (g *guard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx = withRequestID(ctx)
	if err := g.decodeError(req); err != nil {
		return nil, err
	}
	var slot *fetchSlot
	if info.FullMethod == floev1.LogService_Fetch_FullMethodName {
		ctx, slot = withFetchSlot(ctx)
	}
	resp, err := handler(ctx, req)
	if err != nil {
		if slot != nil {
			slot.answer(nil) // drops an answer left behind
		}
		return nil, publicError(ctx, g.log, info.FullMethod, "", err)
	}
	if slot != nil {
		return slot.answer(resp), nil
	}
	return resp, nil
}

func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := withZeroCopy(withRequestID(ss.Context()))
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
