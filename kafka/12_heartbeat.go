package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: v0 to v4.
//
// Keeps a classic member's session; REBALANCE_IN_PROGRESS tells it to
// rejoin, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID that it was fenced,
// FENCED_INSTANCE_ID that another member holds its static instance id.

func init() { register(kmsg.Heartbeat, 0, 4, async(heartbeat)) }

func heartbeat(_ context.Context, s *Server, _ *conn, req *kmsg.HeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = s.groups.heartbeat(req.Group, req.MemberID, req.InstanceID, req.Generation)
	return resp
}
