package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0 to v4.
//
// A group's coordinator is the agent coordinatorOf picks among the live
// agents (cluster.go), the same answer on every agent: classic-protocol
// membership lives in the coordinator's memory (groups.go). Transaction
// coordinators (key type 1) are refused with INVALID_REQUEST and a message
// saying floe has no transactions.

func init() { register(kmsg.FindCoordinator, 0, 4, async(findCoordinator)) }

const noTransactions = "floe does not support Kafka transactions (idempotent producers work: leave transactional.id unset)"

func findCoordinator(_ context.Context, s *Server, cc *conn, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	view := s.agents.current()
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
			resp.NodeID, resp.Host, resp.Port = s.coordinatorAddr(cc, view, req.CoordinatorKey)
		}
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode, c.ErrorMessage = key, code, msg
		if code == 0 {
			c.NodeID, c.Host, c.Port = s.coordinatorAddr(cc, view, key)
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

// coordinatorAddr is group's coordinator as cc's client is to reach it.
func (s *Server) coordinatorAddr(cc *conn, view *clusterView, group string) (int32, string, int32) {
	a := coordinatorOf(group, view.agents, view.self)
	if a.ID == view.self.ID {
		host, port := s.advertised(cc)
		return a.NodeID, host, port
	}
	return a.NodeID, a.Host, a.Port
}
