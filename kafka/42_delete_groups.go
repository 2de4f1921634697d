package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0 to v2.
//
// Deletes a group's positions from floe's store. A classic group with
// members here, or a floe group with live members, is NON_EMPTY_GROUP; a
// group floe does not know is GROUP_ID_NOT_FOUND.

func init() { register(kmsg.DeleteGroups, 0, 2, async(deleteGroups)) }

func deleteGroups(ctx context.Context, s *Server, _ *conn, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = name
		if _, ok := s.groups.describe(name); ok {
			rg.ErrorCode = kerr.NonEmptyGroup.Code
		} else if err := s.be.KafkaDeleteGroup(ctx, name); err != nil {
			rg.ErrorCode = errCode(err)
			if rg.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
