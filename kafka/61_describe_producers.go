package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeProducers: v0 (what `kafka-transactions describe-producers`
// asks).
//
// Each partition's idempotent producers as floe's sequencer keeps them:
// producer id, epoch and the last sequence appended, by producer id.
// Deviations: the last timestamp is -1 (floe keeps none per producer),
// coordinator epoch -1 and no transaction start offset (no transactions);
// a producer is listed while the sequencer remembers it (floe does not
// expire producer state by time, as Kafka does after
// transactional.id.expiration.ms); at most maxProducersListed per
// partition.

func init() { register(kmsg.DescribeProducers, 0, 0, async(describeProducers)) }

// maxProducersListed bounds one partition's answer.
const maxProducersListed = 1000

func describeProducers(ctx context.Context, s *Server, _ *conn, req *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.be.KafkaTopic(ctx, rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			switch {
			case terr != nil:
				sp.ErrorCode = errCode(terr)
			case p < 0 || p >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				ps, err := s.be.KafkaProducers(ctx, t.ID, p, maxProducersListed)
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = errCode(err), errMessage(err)
					break
				}
				for _, pi := range ps {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.Epoch), pi.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, -1, -1
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
