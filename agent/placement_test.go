package agent_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/placement"
)

type fixedCluster []metadata.AgentInfo

func (c fixedCluster) LiveAgents() []metadata.AgentInfo { return c }

// TestDescribePlacementAddresses: DescribePlacement answers each live
// agent's gRPC address from its own field (an agent that named none, as
// one of an earlier release, answers none, so clients route nothing to
// it) and each partition's agent by placement.Leader.
func TestDescribePlacementAddresses(t *testing.T) {
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	store := objectstore.NewMemory()
	b, err := batcher.New(batcher.DefaultConfig(), store, meta, batcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(ctx) }()
	ag, err := agent.New(agent.DefaultConfig(), meta, store, b, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	top, err := meta.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 8})
	if err != nil {
		t.Fatal(err)
	}
	cluster := fixedCluster{
		{ID: "a", NodeID: 1, Host: "10.0.0.1", Port: 9092, Zone: "z1", GRPCAddr: "10.0.0.1:7070"},
		{ID: "old-release grpc=10.0.0.2:7070", NodeID: 2, Host: "10.0.0.2", Port: 9092}, // the id is not parsed
	}
	ag.SetCluster(cluster)
	resp, err := ag.DescribePlacement(ctx, &floev1.DescribePlacementRequest{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{1: "10.0.0.1:7070", 2: ""}
	if len(resp.GetAgents()) != 2 {
		t.Fatalf("agents %v, want 2", resp.GetAgents())
	}
	for _, a := range resp.GetAgents() {
		if a.GetGrpcAddress() != want[a.GetNodeId()] {
			t.Errorf("agent %d: gRPC address %q, want %q", a.GetNodeId(), a.GetGrpcAddress(), want[a.GetNodeId()])
		}
	}
	for p, node := range resp.GetPartitionAgents() {
		if l := placement.Leader(top.ID, int32(p), cluster, ""); l.NodeID != node {
			t.Errorf("partition %d: agent %d, placement.Leader says %d", p, node, l.NodeID)
		}
	}
}
