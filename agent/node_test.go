package agent_test

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// node is one agent, with its batcher and gRPC server, on the metadata and
// object stores the test gives it (several nodes may share them).
type node struct {
	c   *client.Client
	ag  *agent.Agent
	lis *agenttest.Agent // more clients: lis.DialContext
}

// startNode runs an agent until the end of t. The stores are the caller's.
func startNode(t testing.TB, meta metadata.Store, store objectstore.Store, acfg agent.Config, bcfg batcher.Config, sopts ...grpc.ServerOption) *node {
	t.Helper()
	a := agenttest.Start(t, meta, store, agenttest.Options{Agent: acfg, Batcher: bcfg, ServerOptions: sopts})
	return &node{c: a.Client, ag: a.Agent, lis: a}
}
