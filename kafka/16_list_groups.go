package kafka

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0 to v4.
//
// The classic groups with members here and every group of floe's
// metadata store (with positions or members of floe's protocol), once
// each, filtered by state (v4). Deviation: a store failure answers the
// classic groups only, with its error code.

func init() { register(kmsg.ListGroups, 0, 4, async(listGroups)) }

func listGroups(ctx context.Context, s *Server, _ *conn, req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	seen := s.groups.list()
	stored, err := s.be.KafkaListGroups(ctx)
	resp.ErrorCode = errCode(err)
	for _, g := range stored {
		if _, ok := seen[g.Group]; !ok {
			seen[g.Group] = groupView{state: floeState(g.State), protocolType: "consumer"}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := seen[n]
		if len(req.StatesFilter) > 0 && !slices.Contains(req.StatesFilter, v.state) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = n, v.protocolType, v.state
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
