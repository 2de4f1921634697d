// Package agenttest runs a real floe agent in process for tests: an
// agent and its batcher on the stores a test gives, served over an
// in-memory gRPC connection (bufconn: no port), with a client of it, all
// stopped when the test ends (or when the test kills it). The agent
// tests' harnesses, the client package's fake-contract tests and the
// Kafka tests' brokers are built on it: one harness.
package agenttest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// Options change Start's agent.
type Options struct {
	// Agent and Batcher are the configurations (see Default).
	Agent   agent.Config
	Batcher batcher.Config
	// AgentOptions are the agent's options (its Logger, Registry, ...).
	AgentOptions agent.Options
	// TCP serves the agent on a free loopback port (Agent.Addr: for a
	// client.Router, which dials the addresses the placement names)
	// instead of an in-memory connection.
	TCP bool
	// ServerOptions, optional, are given to the gRPC server (interceptors
	// that count what it sends, agent.GRPCServerOptions).
	ServerOptions []grpc.ServerOption
	// Committer, optional, is the batcher's committer (a wrapper of the
	// metadata store that injects faults); nil: the metadata store.
	Committer batcher.Committer
	// OnCommit, optional, sees each committed file after the agent did.
	OnCommit func(batcher.CommittedFile)
}

// Default returns the packages' defaults with a 1 ms linger, so that a
// produce is answered at once.
func Default() Options {
	o := Options{Agent: agent.DefaultConfig(), Batcher: batcher.DefaultConfig()}
	o.Batcher.Linger = time.Millisecond
	return o
}

// Agent is a running agent.
type Agent struct {
	// Agent is the agent itself (a Kafka server may be put on it).
	Agent *agent.Agent
	// Client is a client of its gRPC services.
	Client *client.Client
	Meta   metadata.Store
	Store  objectstore.Store
	// Addr is the agent's loopback address (Options.TCP), else "".
	Addr string

	dial     func(context.Context) (net.Conn, error)
	killOnce sync.Once
	kill     func()
}

// DialContext opens a connection to the agent's gRPC server, for more
// clients than Client: grpc.WithContextDialer(func(ctx context.Context,
// _ string) (net.Conn, error) { return a.DialContext(ctx) }).
func (a *Agent) DialContext(ctx context.Context) (net.Conn, error) { return a.dial(ctx) }

// Kill stops the agent now, as a crash would for its clients: its gRPC
// server, its batcher (pending records fail) and its background loops.
// Client stays open (its calls fail) until the end of the test. Kill may
// be called more than once.
func (a *Agent) Kill() { a.killOnce.Do(a.kill) }

// Start runs an agent on meta and store until the end of tb and returns
// it. The stores stay the caller's: Start does not close them.
func Start(tb testing.TB, meta metadata.Store, store objectstore.Store, o Options) *Agent {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var ag *agent.Agent
	var committer batcher.Committer = meta
	if o.Committer != nil {
		committer = o.Committer
	}
	onCommit := func(f batcher.CommittedFile) {
		ag.OnCommit(f)
		if o.OnCommit != nil {
			o.OnCommit(f)
		}
	}
	b, err := batcher.New(o.Batcher, store, committer, batcher.Options{OnCommit: onCommit})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if ag, err = agent.New(o.Agent, meta, store, b, o.AgentOptions); err != nil {
		_ = b.Close(context.Background())
		cancel()
		tb.Fatal(err)
	}
	var lis net.Listener
	a := &Agent{Agent: ag, Meta: meta, Store: store}
	var dialOpts []grpc.DialOption
	if o.TCP {
		if lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			_ = b.Close(context.Background())
			cancel()
			tb.Fatal(err)
		}
		a.Addr = lis.Addr().String()
		a.dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", a.Addr)
		}
	} else {
		bl := bufconn.Listen(1 << 20)
		lis, a.dial = bl, bl.DialContext
		dialOpts = []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return bl.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	gs := grpc.NewServer(o.ServerOptions...)
	ag.Register(gs)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = gs.Serve(lis) }()
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	a.kill = func() {
		gs.Stop()
		_ = b.Close(context.Background())
		cancel()
		wg.Wait()
	}
	target := "passthrough:///bufnet"
	if o.TCP {
		target = a.Addr
	}
	c, err := client.Dial(target, dialOpts...)
	if err != nil {
		a.Kill()
		tb.Fatal(err)
	}
	a.Client = c
	tb.Cleanup(func() {
		c.Close()
		a.Kill()
	})
	return a
}

// StartLocal is Start on a fresh SQLite store (in tb's temporary folder,
// closed at its end) and the in-memory object store.
func StartLocal(tb testing.TB, o Options) *Agent {
	tb.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "meta.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { meta.Close() }) // after the agent's stop (cleanups run last first)
	return Start(tb, meta, objectstore.NewMemory(), o)
}
