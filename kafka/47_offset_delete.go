package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// OffsetDelete: v0.
//
// Deletes a group's committed positions of the partitions named from
// floe's store (the positions gRPC consumers and `floe group` see too).
// A group floe does not know is GROUP_ID_NOT_FOUND; an unknown topic or
// partition UNKNOWN_TOPIC_OR_PARTITION. Deviation: while the group has
// members (classic members on this agent, or live members of floe's own
// protocol) every partition is GROUP_SUBSCRIBED_TO_TOPIC, whatever the
// members subscribe to (Apache Kafka refuses only the topics subscribed).

func init() { register(kmsg.OffsetDelete, 0, 0, async(offsetDelete)) }

func offsetDelete(ctx context.Context, s *Server, _ *conn, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	_, classic := s.groups.describe(req.Group)
	var tps []metadata.TopicPartition
	var ok []*kmsg.OffsetDeleteResponseTopicPartition // the partitions tps names, to answer
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.be.KafkaTopic(ctx, rt.Topic)
		st.Partitions = make([]kmsg.OffsetDeleteResponseTopicPartition, len(rt.Partitions))
		for i, rp := range rt.Partitions {
			sp := &st.Partitions[i]
			*sp = kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case terr != nil:
				sp.ErrorCode = errCode(terr)
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case classic:
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				tps = append(tps, metadata.TopicPartition{TopicID: t.ID, Partition: rp.Partition})
				ok = append(ok, sp)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(tps) == 0 {
		return resp
	}
	err := s.be.KafkaDeleteOffsets(ctx, req.Group, tps)
	switch code := errCode(err); code {
	case 0:
	case kerr.UnknownTopicOrPartition.Code: // the group is not found
		resp.ErrorCode = kerr.GroupIDNotFound.Code
	case kerr.NonEmptyGroup.Code:
		for _, sp := range ok {
			sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
		}
	default:
		resp.ErrorCode = code
	}
	return resp
}
