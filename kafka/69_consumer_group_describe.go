package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// ConsumerGroupDescribe: v0 to v1 (KIP-848, what `kafka-consumer-groups
// --describe` and Kafka 4 admin clients ask for `group.protocol=consumer`
// groups).
//
// floe's own groups (KIP-848's, shared with gRPC consumers) are described
// from the metadata store: state Empty, Stable or Reconciling, the group
// epoch as both epoch and assignment epoch, assignor "floe" (floe's
// balanced sticky assignor), each member's epoch, subscription, current
// and target assignment (topic ids and names). A classic group with
// members on this agent is GROUP_ID_NOT_FOUND with a message saying so,
// as Kafka answers for a group of the other protocol; an unknown group is
// GROUP_ID_NOT_FOUND. Deviations: no client id, host, instance id or rack
// per member (floe does not keep them); member type -1 (unknown).

func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, async(consumerGroupDescribe)) }

func consumerGroupDescribe(ctx context.Context, s *Server, _ *conn, req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = name
		if _, ok := s.groups.describe(name); ok {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "group " + name + " is a classic-protocol group (use DescribeGroups)"
			rg.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := s.be.KafkaDescribeGroup(ctx, name)
		switch {
		case err != nil && errCode(err) == kerr.UnknownTopicOrPartition.Code:
			rg.ErrorCode = kerr.GroupIDNotFound.Code
		case err != nil:
			rg.ErrorCode, rg.ErrorMessage = errCode(err), errMessage(err)
		default:
			rg.State = map[metadata.GroupState]string{metadata.GroupEmpty: "Empty", metadata.GroupStable: "Stable",
				metadata.GroupReconciling: "Reconciling"}[d.State]
			rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.GroupEpoch, d.GroupEpoch, "floe"
			names := map[int64]string{}
			for _, m := range d.Members {
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.SubscribedTopics = m.MemberID, m.MemberEpoch, m.Subscription
				dm.Assignment.TopicPartitions = s.assignmentOf(ctx, names, m.Assigned)
				dm.TargetAssignment.TopicPartitions = s.assignmentOf(ctx, names, m.Target)
				rg.Members = append(rg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// assignmentOf groups partitions by topic, sorted, naming each topic
// (names caches the lookups of one answer; a topic gone since is left
// without a name).
func (s *Server) assignmentOf(ctx context.Context, names map[int64]string, tps []metadata.TopicPartition) []kmsg.AssignmentTopicPartition {
	byTopic := map[int64][]int32{}
	for _, tp := range tps {
		byTopic[tp.TopicID] = append(byTopic[tp.TopicID], tp.Partition)
	}
	out := make([]kmsg.AssignmentTopicPartition, 0, len(byTopic))
	for id, parts := range byTopic {
		name, ok := names[id]
		if !ok {
			if t, err := s.be.KafkaTopicByID(ctx, id); err == nil {
				name = t.Name
			}
			names[id] = name
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		a := kmsg.NewAssignmentTopicPartition()
		a.TopicID, a.Topic, a.Partitions = topicUUID(id), name, parts
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}
