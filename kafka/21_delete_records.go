package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// DeleteRecords: v0 to v2.
//
// floe's DeleteRecords (as `floe topic delete-records`): the partition's
// log start moves up to the offset given (-1: the high watermark), the
// answer's low watermark is the new log start. An offset past the high
// watermark (or below -1) is OFFSET_OUT_OF_RANGE. The records go when the compactor
// next rewrites or drops their files; reads below the log start fail at
// once.

func init() { register(kmsg.DeleteRecords, 0, 2, async(deleteRecords)) }

func deleteRecords(ctx context.Context, s *Server, _ *conn, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			r, err := s.be.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset})
			switch {
			case status.Code(err) == codes.InvalidArgument: // an offset outside the log
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
			case err != nil:
				sp.ErrorCode = errCode(err)
			default:
				sp.LowWatermark = r.GetLogStartOffset()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
