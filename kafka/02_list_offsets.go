package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// ListOffsets: v1 to v7.
//
// Timestamp -2 is the log start offset, -1 the high watermark (the last
// stable offset too: no transactions), -3 (v7, KIP-734) the first record
// carrying the largest timestamp of the log, with that timestamp (-1 for
// an empty log), any other the first offset of the first batch whose max
// timestamp is at or after it, or -1 when there is none (as Kafka
// answers). Other answers carry timestamp -1; all leader epoch 0.
// Deviations: v8's earliest-local (-4) is not served (the version is not
// offered); a timestamp lookup answers with the offset of the first record
// of the batch found (Kafka gives the first record at or after the
// timestamp inside it); -3 reads every batch row of the partition in the
// metadata store (an admin lookup, not for a hot path).

func init() { register(kmsg.ListOffsets, 1, 7, async(listOffsets)) }

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
				if rp.Timestamp == -3 {
					sp.Offset, sp.Timestamp, sp.ErrorCode = s.maxTimestampOffset(ctx, t.ID, rp.Partition)
					break
				}
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

// maxTimestampOffset is the offset and timestamp of the first record with
// the log's largest timestamp: the store finds its batch, the batch's
// records say which record it is.
func (s *Server) maxTimestampOffset(ctx context.Context, topicID int64, p int32) (int64, int64, int16) {
	off, err := s.be.KafkaListOffset(ctx, topicID, p, metadata.OffsetMaxTimestamp, 0)
	if err != nil {
		return -1, -1, errCode(err)
	}
	rd, err := s.be.KafkaRead(ctx, topicID, p, off, 1)
	if err != nil {
		return -1, -1, errCode(err)
	}
	if off >= rd.HighWatermark {
		return -1, -1, 0 // an empty log
	}
	var found bool
	var at, ts int64
	err = kbatch.Split(rd.Batches, func(b []byte) error {
		if found {
			return nil
		}
		info, recs, err := kbatch.Decode(b, s.be.KafkaLimits().MaxRequestBytes)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Offset >= off && r.Timestamp == info.MaxTimestamp {
				found, at, ts = true, r.Offset, r.Timestamp
				return nil
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return -1, -1, kerr.CorruptMessage.Code
	case !found:
		return off, -1, 0 // a batch whose records disagree with its header: its offset
	}
	return at, ts, 0
}
