package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// ListOffsets: v1 to v6.
//
// Timestamp -2 is the log start offset, -1 the high watermark (the last
// stable offset too: no transactions), any other the first offset of the
// first batch whose max timestamp is at or after it, or -1 when there is
// none (as Kafka answers). Answers carry timestamp -1 and leader epoch 0.
// Deviations: v7's max-timestamp lookup (-3) and v8's earliest-local (-4)
// are not served (the versions are not offered); a timestamp lookup
// answers with the offset of the first record of the batch found (Kafka
// gives the first record at or after the timestamp inside it).

func init() { register(kmsg.ListOffsets, 1, 6, async(listOffsets)) }

func listOffsets(ctx context.Context, s *Server, _ *conn, req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.be.KafkaTopic(ctx, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.Timestamp, sp.Offset, sp.LeaderEpoch = rp.Partition, -1, -1, 0
			switch {
			case terr != nil:
				sp.ErrorCode = errCode(terr)
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				sp.Offset, sp.ErrorCode = s.listOffset(ctx, t.ID, rp.Partition, rp.Timestamp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) listOffset(ctx context.Context, topicID int64, p int32, ts int64) (int64, int16) {
	spec := metadata.OffsetTimestamp
	switch ts {
	case -1:
		spec = metadata.OffsetLatest
	case -2:
		spec = metadata.OffsetEarliest
	default:
		if ts < 0 {
			return -1, kerr.UnsupportedVersion.Code
		}
	}
	off, err := s.be.KafkaListOffset(ctx, topicID, p, spec, ts)
	if err != nil {
		return -1, errCode(err)
	}
	if spec == metadata.OffsetTimestamp {
		hw, err := s.be.KafkaListOffset(ctx, topicID, p, metadata.OffsetLatest, 0)
		if err != nil {
			return -1, errCode(err)
		}
		if off >= hw {
			return -1, 0 // no record at or after ts
		}
	}
	return off, 0
}
