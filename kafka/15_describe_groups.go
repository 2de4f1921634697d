package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// DescribeGroups: v0 to v5.
//
// A classic group with members here is described as Kafka describes it.
// Any other group floe knows (positions only, or members of floe's own
// protocol) is described from the metadata store: state Empty or Stable
// (PreparingRebalance while reconciling), protocol type "consumer",
// protocol "floe", each member's assignment as a consumer-protocol
// assignment. An unknown group is state Dead, as in Kafka.

func init() { register(kmsg.DescribeGroups, 0, 5, async(describeGroups)) }

func describeGroups(ctx context.Context, s *Server, _ *conn, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = name
		rg.AuthorizedOperations = -2147483648
		if v, ok := s.groups.describe(name); ok {
			rg.State, rg.ProtocolType, rg.Protocol, rg.Members = v.state, v.protocolType, v.protocol, v.members
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := s.be.KafkaDescribeGroup(ctx, name)
		switch {
		case err != nil && errCode(err) == kerr.UnknownTopicOrPartition.Code:
			rg.State = "Dead" // NotFound: no such group
		case err != nil:
			rg.ErrorCode = errCode(err)
		default:
			rg.State, rg.ProtocolType = floeState(d.State), "consumer"
			if len(d.Members) > 0 {
				rg.Protocol = "floe"
			}
			for _, m := range d.Members {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID = m.MemberID
				dm.MemberAssignment = s.encodeAssignment(ctx, m.Assigned)
				rg.Members = append(rg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// floeState names a floe group state as Kafka would.
func floeState(s metadata.GroupState) string {
	switch s {
	case metadata.GroupStable:
		return "Stable"
	case metadata.GroupReconciling:
		return "PreparingRebalance"
	}
	return "Empty"
}

// encodeAssignment encodes partitions as a consumer-protocol assignment.
func (s *Server) encodeAssignment(ctx context.Context, tps []metadata.TopicPartition) []byte {
	byTopic := map[int64][]int32{}
	for _, tp := range tps {
		byTopic[tp.TopicID] = append(byTopic[tp.TopicID], tp.Partition)
	}
	a := kmsg.NewConsumerMemberAssignment()
	for id, parts := range byTopic {
		t, err := s.be.KafkaTopicByID(ctx, id)
		if err != nil {
			continue
		}
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t.Name, Partitions: parts})
	}
	sort.Slice(a.Topics, func(i, j int) bool { return a.Topics[i].Topic < a.Topics[j].Topic })
	return a.AppendTo(nil)
}
