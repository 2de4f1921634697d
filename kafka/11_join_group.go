package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup: v0 to v9.
//
// Kafka's classic join (groups.go): v4+ members without an id get
// MEMBER_ID_REQUIRED and a new id to rejoin with; static members
// (group.instance.id, v5+) joining without a member id take over their
// previous id; a stale member id of an instance is fenced (staticRule,
// static_members.go). The answer waits
// until every member has rejoined or the longest rebalance timeout has
// passed. A restarted static member of a Stable group whose protocols
// leave the group's protocol as it is keeps its assignment, answered at
// once in the same generation (the leader with SkipAssignment, v9; an
// older leader rebalances): staticKeepsAssignment. A known member that
// joins again with the same protocols is answered with the current
// generation while the group completes its rebalance or, except the
// leader, while it is Stable: rejoinRule (member_rejoin.go).

func init() { register(kmsg.JoinGroup, 0, 9, async(joinGroup)) }

func joinGroup(ctx context.Context, s *Server, cc *conn, req *kmsg.JoinGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	}
	ch, now := s.groups.join(joinRequest{
		group: req.Group, memberID: req.MemberID, protocolType: req.ProtocolType, instanceID: req.InstanceID,
		clientID: cc.clientIDNow(), host: cc.remoteHost(), protocols: req.Protocols,
		session: time.Duration(req.SessionTimeoutMillis) * time.Millisecond, rebalance: rebalance,
		requireKnownID: req.Version >= 4, canSkipAssignment: req.Version >= 9,
	})
	r := now
	if ch != nil {
		select {
		case r = <-ch:
		case <-ctx.Done():
			r = joinResult{code: kerr.RebalanceInProgress.Code, memberID: req.MemberID}
		}
	}
	resp.ErrorCode, resp.MemberID = r.code, r.memberID
	resp.Generation = -1
	if r.code == 0 {
		pt, p := req.ProtocolType, r.protocol
		resp.Generation, resp.ProtocolType, resp.Protocol = r.generation, &pt, &p
		resp.LeaderID, resp.Members, resp.SkipAssignment = r.leader, r.members, r.skipAssignment
	}
	return resp
}
