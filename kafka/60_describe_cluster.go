package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0 to v1.
//
// One broker, this agent (as Metadata shows it), also the controller.

func init() { register(kmsg.DescribeCluster, 0, 1, async(describeCluster)) }

func describeCluster(_ context.Context, s *Server, cc *conn, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = s.cfg.ClusterID
	resp.ControllerID = s.cfg.NodeID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID = s.cfg.NodeID
	b.Host, b.Port = s.advertised(cc)
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	return resp
}
