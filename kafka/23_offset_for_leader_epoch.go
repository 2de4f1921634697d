package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch: v0 to v4.
//
// Every partition has had one leader epoch, 0, since it was created (no
// leader ever changes: every agent leads every partition), so the end
// offset of any epoch at or after 0 is the high watermark: a consumer
// validating its position after a metadata refresh never truncates.
// Asking for an epoch below 0 answers epoch -1 and offset -1.

func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, async(offsetForLeaderEpoch)) }

func offsetForLeaderEpoch(ctx context.Context, s *Server, _ *conn, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.be.KafkaTopic(ctx, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			switch {
			case terr != nil:
				sp.ErrorCode = errCode(terr)
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.CurrentLeaderEpoch > 0:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch >= 0:
				sp.LeaderEpoch, sp.EndOffset, sp.ErrorCode = s.listOffsetEpoch(ctx, t.ID, rp.Partition)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) listOffsetEpoch(ctx context.Context, topicID int64, p int32) (int32, int64, int16) {
	off, code := s.listOffset(ctx, topicID, p, -1)
	if code != 0 {
		return -1, -1, code
	}
	return 0, off, 0
}
