package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0 to v1.
//
// The live agents, as Metadata shows them; the controller is the one with
// the lowest node id.

func init() { register(kmsg.DescribeCluster, 0, 1, async(describeCluster)) }

func describeCluster(_ context.Context, s *Server, cc *conn, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = s.cfg.ClusterID
	view := s.agents.current()
	resp.ControllerID = view.agents[0].NodeID
	for _, mb := range s.brokers(cc, view) {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp
}
