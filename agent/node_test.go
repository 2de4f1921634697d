package agent_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// node is one agent, with its batcher and gRPC server, on the metadata and
// object stores the test gives it (several nodes may share them).
type node struct {
	c   *client.Client
	ag  *agent.Agent
	lis *bufconn.Listener // the gRPC server's listener (more clients: lis.DialContext)
}

// startNode runs an agent until the end of t. The stores are the caller's.
func startNode(t testing.TB, meta metadata.Store, store objectstore.Store, acfg agent.Config, bcfg batcher.Config, sopts ...grpc.ServerOption) *node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var ag *agent.Agent
	b, err := batcher.New(bcfg, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		t.Fatal(err)
	}
	ag, err = agent.New(acfg, meta, store, b, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(sopts...)
	ag.Register(gs)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = gs.Serve(lis) }()
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	c, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		gs.Stop()
		_ = b.Close(context.Background())
		cancel()
		wg.Wait()
	})
	return &node{c: c, ag: ag, lis: lis}
}
