package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0 to v4.
//
// The coordinator of every group is the agent asked (Metadata's one
// broker). Transaction coordinators (key type 1) are refused with
// INVALID_REQUEST and a message saying floe has no transactions.
// Deviation: classic-protocol group membership is held by the agent a
// member talks to (groups.go); members of one classic group must reach
// the same agent (one agent, or a Service with client-IP affinity).

func init() { register(kmsg.FindCoordinator, 0, 4, async(findCoordinator)) }

const noTransactions = "floe does not support Kafka transactions (idempotent producers work: leave transactional.id unset)"

func findCoordinator(_ context.Context, s *Server, cc *conn, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port := s.advertised(cc)
	var code int16
	var msg *string
	if req.CoordinatorType != 0 {
		code = kerr.InvalidRequest.Code
		m := noTransactions
		msg = &m
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		if code == 0 {
			resp.NodeID, resp.Host, resp.Port = s.cfg.NodeID, host, port
		}
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode, c.ErrorMessage = key, code, msg
		if code == 0 {
			c.NodeID, c.Host, c.Port = s.cfg.NodeID, host, port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}
