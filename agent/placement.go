package agent

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/placement"
)

// DescribePlacement serves TopicService.DescribePlacement: the live
// agents, with the gRPC addresses their rows in the agents table carry,
// and each partition of a topic's preferred agent by placement.Leader,
// the rule the Kafka listener's Metadata answer names leaders by. Clients
// with partition affinity send each partition's produce requests there;
// every agent still accepts every partition.
//
// The live agents come from the Kafka listener's heartbeat (kafka
// cluster.go), handed over with SetCluster; an agent without one answers
// no agents, and its clients send everything to the agent they dialed.

// ClusterSource is the view of the live agents an agent answers with.
type ClusterSource interface {
	// LiveAgents is the latest view: every live agent, this one included.
	LiveAgents() []metadata.AgentInfo
}

// clusterRef holds the agent's ClusterSource (nil until SetCluster).
type clusterRef struct{ p atomic.Pointer[ClusterSource] }

// SetCluster makes DescribePlacement answer from src.
func (a *Agent) SetCluster(src ClusterSource) { a.cluster.p.Store(&src) }

func (a *Agent) liveAgents() []metadata.AgentInfo {
	if src := a.cluster.p.Load(); src != nil {
		return (*src).LiveAgents()
	}
	return nil
}

// DescribePlacement implements TopicService.
func (a *Agent) DescribePlacement(ctx context.Context, req *floev1.DescribePlacementRequest) (*floev1.DescribePlacementResponse, error) {
	if err := metadata.ValidateTopicName(req.GetTopic()); err != nil {
		return nil, toStatus(err)
	}
	if len(req.GetZone()) > metadata.MaxAgentFieldLen {
		return nil, status.Errorf(codes.InvalidArgument, "describe placement: zone must be at most %d bytes", metadata.MaxAgentFieldLen)
	}
	t, err := a.topics.get(ctx, req.GetTopic())
	if err != nil {
		return nil, toStatus(err)
	}
	agents := a.liveAgents()
	resp := &floev1.DescribePlacementResponse{}
	if len(agents) == 0 {
		return resp, nil
	}
	for _, g := range agents {
		resp.Agents = append(resp.Agents, &floev1.AgentEndpoint{NodeId: g.NodeID, GrpcAddress: g.GRPCAddr, Zone: g.Zone})
	}
	resp.PartitionAgents = make([]int32, t.Partitions)
	for p := range t.Partitions {
		resp.PartitionAgents[p] = placement.Leader(t.ID, p, agents, req.GetZone()).NodeID
	}
	return resp, nil
}
