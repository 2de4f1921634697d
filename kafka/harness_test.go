package kafka_test

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
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
	o := agenttest.Default()
	o.Batcher.Linger = 5 * time.Millisecond
	o.Agent.PollInterval = 200 * time.Millisecond
	o.AgentOptions = aopts
	return startBrokerAgent(t, meta, store, o, mutate, opts, wrap)
}

// startBrokerAgent is startBrokerWith with the agent's whole options.
func startBrokerAgent(t testing.TB, meta metadata.Store, store objectstore.Store, o agenttest.Options, mutate func(*kafka.Config), opts kafka.Options, wrap func(net.Listener) net.Listener) *broker {
	t.Helper()
	a := agenttest.Start(t, meta, store, o)
	kcfg := kafka.DefaultConfig()
	kcfg.MinSessionTimeout = time.Second
	if mutate != nil {
		mutate(&kcfg)
	}
	be := &crashable{Agent: a.Agent}
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
	kctx, kcancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(kctx, klis); err != nil {
			t.Errorf("kafka serve: %v", err)
		}
	}()
	// Before the agent's stop (cleanups run last first).
	t.Cleanup(func() {
		kcancel()
		<-served
	})
	kill := func() {
		be.crashed.Store(true)
		kcancel()
		<-served
	}
	return &broker{addr: klis.Addr().String(), c: a.Client, meta: meta, srv: srv, kill: kill}
}
