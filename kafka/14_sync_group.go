package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup: v0 to v5.
//
// The leader's SyncGroup carries every member's assignment; the others
// wait for it. A member of a stable group gets its assignment at once.
// A v5 request's protocol type and name, when given, must be the group's
// (INCONSISTENT_GROUP_PROTOCOL); the answer carries the group's, as
// Apache Kafka's.

func init() { register(kmsg.SyncGroup, 0, 5, async(syncGroup)) }

func syncGroup(ctx context.Context, s *Server, _ *conn, req *kmsg.SyncGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	ch, r := s.groups.sync(req.Group, req.MemberID, req.InstanceID, req.Generation, req.ProtocolType, req.Protocol, req.GroupAssignment)
	if ch != nil {
		select {
		case r = <-ch:
		case <-ctx.Done():
			r = syncResult{code: kerr.RebalanceInProgress.Code}
		}
	}
	resp.ErrorCode, resp.MemberAssignment = r.code, r.assignment
	if r.code == 0 {
		resp.ProtocolType, resp.Protocol = &r.protocolType, &r.protocol
	}
	return resp
}
