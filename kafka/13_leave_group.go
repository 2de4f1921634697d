package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup: v0 to v5.
//
// Removes members (v3+: several, by member id or instance id); the others
// rebalance at once; an id MEMBER_ID_REQUIRED handed out and not yet
// joined leaves with NONE. An agent that does not coordinate the group
// answers NOT_COORDINATOR; an empty group id is INVALID_GROUP_ID.

func init() { register(kmsg.LeaveGroup, 0, 5, async(leaveGroup)) }

func leaveGroup(_ context.Context, s *Server, _ *conn, req *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if !s.agents.current().ownsGroup(req.Group) {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	if req.Version < 3 {
		resp.ErrorCode = s.groups.leave(req.Group, []string{req.MemberID}, []*string{nil})[0]
		return resp
	}
	ids := make([]string, len(req.Members))
	inst := make([]*string, len(req.Members))
	for i, m := range req.Members {
		ids[i], inst[i] = m.MemberID, m.InstanceID
	}
	for i, code := range s.groups.leave(req.Group, ids, inst) {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = ids[i], inst[i], code
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
