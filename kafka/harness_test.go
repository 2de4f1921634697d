package kafka_test

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

func TestMain(m *testing.M) {
	// sarama's metrics registry starts a ticker it never stops.
	testenv.Main(m, testenv.VerifyNoLeaks(goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")))
}

// broker is one agent serving gRPC (c, in process) and Kafka (addr, on a
// free loopback port).
type broker struct {
	addr string
	c    *client.Client
	meta metadata.Store
	srv  *kafka.Server
	// kill stops the Kafka listener as a crash would: connections drop,
	// beats stop and the agent's row is left to expire.
	kill func()
}

// crashable is an agent whose Kafka server can be killed: then it does
// not remove its row from the agents table.
type crashable struct {
	*agent.Agent
	crashed atomic.Bool
}

func (c *crashable) KafkaLeaveAgent(ctx context.Context, id string) error {
	if c.crashed.Load() {
		return nil
	}
	return c.Agent.KafkaLeaveAgent(ctx, id)
}

// startBroker runs an agent with a Kafka listener on SQLite and an
// in-memory object store until the end of t.
func startBroker(t testing.TB, mutate func(*kafka.Config)) *broker {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	return startBrokerOn(t, meta, objectstore.NewMemory(), mutate)
}

// startBrokerOn runs an agent with a Kafka listener on the stores given
// (the caller's: several brokers may share them) until the end of t.
func startBrokerOn(t testing.TB, meta metadata.Store, store objectstore.Store, mutate func(*kafka.Config)) *broker {
	t.Helper()
	return startBrokerWith(t, meta, store, mutate, agent.Options{}, kafka.Options{}, nil)
}

// startBrokerWith is startBrokerOn with the agent's options, the server's
// (its logger is the test's) and a wrapper of its listener (nil: plain TCP).
func startBrokerWith(t testing.TB, meta metadata.Store, store objectstore.Store, mutate func(*kafka.Config), aopts agent.Options, opts kafka.Options, wrap func(net.Listener) net.Listener) *broker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	acfg.PollInterval = 200 * time.Millisecond
	var ag *agent.Agent
	b, err := batcher.New(bcfg, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		t.Fatal(err)
	}
	ag, err = agent.New(acfg, meta, store, b, aopts)
	if err != nil {
		t.Fatal(err)
	}
	kcfg := kafka.DefaultConfig()
	kcfg.MinSessionTimeout = time.Second
	if mutate != nil {
		mutate(&kcfg)
	}
	be := &crashable{Agent: ag}
	opts.Logger = testLogger(t)
	srv, err := kafka.New(kcfg, be, opts)
	if err != nil {
		t.Fatal(err)
	}
	klis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		klis = wrap(klis)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	ag.Register(gs)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = gs.Serve(lis) }()
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	kctx, kcancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(served)
		if err := srv.Serve(kctx, klis); err != nil {
			t.Errorf("kafka serve: %v", err)
		}
	}()
	kill := func() {
		be.crashed.Store(true)
		kcancel()
		<-served
	}
	c, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		gs.Stop()
		_ = b.Close(context.Background())
		wg.Wait()
	})
	return &broker{addr: klis.Addr().String(), c: c, meta: meta, srv: srv, kill: kill}
}
