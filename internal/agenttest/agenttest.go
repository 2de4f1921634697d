// Package agenttest runs a real floe agent in process for tests: an
// agent and its batcher on the stores a test gives, served over an
// in-memory gRPC connection (bufconn: no port), with a client of it, all
// stopped when the test ends. The client package's fake-contract tests
// hold their fakes to it; the Kafka tests build their broker on it.
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
	// that count what it sends).
	ServerOptions []grpc.ServerOption
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
}

// Start runs an agent on meta and store until the end of tb and returns
// it. The stores stay the caller's: Start does not close them.
func Start(tb testing.TB, meta metadata.Store, store objectstore.Store, o Options) *Agent {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var ag *agent.Agent
	b, err := batcher.New(o.Batcher, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
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
	addr, dialOpts := "", []grpc.DialOption(nil)
	if o.TCP {
		if lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			_ = b.Close(context.Background())
			cancel()
			tb.Fatal(err)
		}
		addr = lis.Addr().String()
	} else {
		bl := bufconn.Listen(1 << 20)
		lis = bl
		dialOpts = []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return bl.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	gs := grpc.NewServer(o.ServerOptions...)
	ag.Register(gs)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = gs.Serve(lis) }()
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	target := "passthrough:///bufnet"
	if o.TCP {
		target = addr
	}
	c, err := client.Dial(target, dialOpts...)
	stop := func() {
		if c != nil {
			c.Close()
		}
		cancel()
		gs.Stop()
		_ = b.Close(context.Background())
		wg.Wait()
	}
	if err != nil {
		stop()
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return &Agent{Agent: ag, Client: c, Meta: meta, Store: store, Addr: addr}
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
