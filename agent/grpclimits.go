package agent

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/tap"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// The gRPC edge's bounds (GRPCServerOptions, LimitListener): a client
// that half-sends messages, opens many streams or connections, or keeps
// idle connections cannot hold the agent's memory.
//
// gRPC grants a stream flow-control room for the whole message its header
// declares, so a message half sent holds what was sent of it (up to
// MaxRecvMsgBytes) until the client goes: 32 streams that declared 16 MiB
// and sent all but the last byte held 514 MB. So every stream takes
// MaxRecvMsgBytes of the agent's receive budget (GRPCMaxRecvInFlightBytes)
// when it opens (none left: ResourceExhausted naming
// grpc_max_recv_inflight_bytes), and gives it back once its one request
// has arrived (unary and server-streaming RPCs of floe's services) or when
// it ends (client-streaming ones, such as ProduceStream, which receive for
// their life; and any other service's). A stream's room beyond its
// current message is the server's stream window (GRPCInitialWindowSize,
// fixed: BDP growth off), so a stream never holds more than its share.

// recvBudget is the receive budget of one gRPC server.
type recvBudget struct {
	sem    *semaphore.Weighted
	charge int64 // MaxRecvMsgBytes
	total  int64 // GRPCMaxRecvInFlightBytes
	held   atomic.Int64
	once   map[string]bool // full method -> gives its charge back with its first request
}

func newRecvBudget(cfg Config) *recvBudget {
	b := &recvBudget{
		sem: semaphore.NewWeighted(cfg.GRPCMaxRecvInFlightBytes), charge: int64(cfg.MaxRecvMsgBytes()),
		total: cfg.GRPCMaxRecvInFlightBytes, once: make(map[string]bool),
	}
	for _, sd := range []grpc.ServiceDesc{floev1.TopicService_ServiceDesc, floev1.LogService_ServiceDesc, floev1.GroupService_ServiceDesc} {
		for _, m := range sd.Methods {
			b.once["/"+sd.ServiceName+"/"+m.MethodName] = true
		}
		for _, st := range sd.Streams {
			if !st.ClientStreams {
				b.once["/"+sd.ServiceName+"/"+st.StreamName] = true
			}
		}
	}
	return b
}

// recvCharge is one stream's share of the budget, given back once.
type recvCharge struct {
	b    *recvBudget
	once bool // give it back with the first request
	done sync.Once
}

func (c *recvCharge) release() {
	c.done.Do(func() {
		c.b.held.Add(-c.b.charge)
		c.b.sem.Release(c.b.charge)
	})
}

type recvChargeKey struct{}

// tap admits a new stream if the budget has room for its charge (it runs
// on the connection's reader: it must not block).
func (b *recvBudget) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if !b.sem.TryAcquire(b.charge) {
		return nil, limitError(codes.ResourceExhausted, "grpc_max_recv_inflight_bytes", b.total,
			"the agent is receiving as many requests as its receive budget allows (%d bytes, grpc_max_recv_inflight_bytes); retry later", b.total)
	}
	b.held.Add(b.charge)
	c := &recvCharge{b: b, once: b.once[info.FullMethodName]}
	context.AfterFunc(ctx, c.release) // the stream ended
	return context.WithValue(ctx, recvChargeKey{}, c), nil
}

// recvStats gives a stream's charge back once its one request arrived.
type recvStats struct{}

func (recvStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (recvStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InPayload); !ok {
		return
	}
	if c, ok := ctx.Value(recvChargeKey{}).(*recvCharge); ok && c.once {
		c.release()
	}
}
func (recvStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (recvStats) HandleConn(context.Context, stats.ConnStats)                       {}

// GRPCInitialWindowSize is the server's flow-control window of a stream
// and of a connection beyond what the messages being read claim. Setting
// it turns gRPC's BDP window growth off (up to 16 MiB per stream).
const GRPCInitialWindowSize = 1 << 20

// grpcLimitOptions are the server options of the edge's bounds.
func grpcLimitOptions(cfg Config, b *recvBudget) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InTapHandle(b.tap),
		grpc.StatsHandler(recvStats{}),
		grpc.InitialWindowSize(GRPCInitialWindowSize),
		grpc.InitialConnWindowSize(GRPCInitialWindowSize),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.GRPCKeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: cfg.GRPCMaxConnectionIdle, MaxConnectionAge: cfg.GRPCMaxConnectionAge,
			MaxConnectionAgeGrace: cfg.GRPCMaxConnectionAgeGrace, Time: cfg.GRPCKeepaliveTime, Timeout: cfg.GRPCKeepaliveTimeout,
		}),
	}
}

// LimitListener accepts at most max connections at once from lis (max
// <= 0: no limit): a connection past it is closed at once, so that the
// client's dial fails and it retries or goes to another agent, instead of
// waiting unseen in the accept queue. refused, when not nil, is called for
// each.
func LimitListener(lis net.Listener, max int, refused func()) net.Listener {
	if max <= 0 {
		return lis
	}
	return &limitListener{Listener: lis, max: int64(max), refused: refused}
}

type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused func()
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			_ = c.Close()
			if l.refused != nil {
				l.refused()
			}
			continue
		}
		return &limitConn{Conn: c, l: l}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
