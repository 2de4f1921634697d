package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId: v0 to v4.
//
// A producer without a transactional id gets a new floe producer id with
// epoch 0 (floe's InitProducer, the same ids gRPC producers get); its
// sequences are then checked by floe's sequencer with Kafka's rules.
// A producer that gives its id and epoch (v3+, KIP-360) gets the next
// epoch of that id (metadata.DecideProducerInit): its sequences restart
// at 0 and its older epochs are fenced; a retried bump gets the same
// answer; a stale epoch gets PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before v4); an exhausted epoch or an unknown id gets a new id.
// Deviations: Apache Kafka gives a producer without a transactional id a
// new id whatever it sends; a transactional id is refused with
// INVALID_REQUEST (floe has no transactions), which Kafka clients report
// as a fatal error of initTransactions.

func init() { register(kmsg.InitProducerID, 0, 4, async(initProducerID)) }

func initProducerID(ctx context.Context, s *Server, _ *conn, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if (req.ProducerID < 0) != (req.ProducerEpoch < 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	id, epoch, err := s.be.KafkaInitProducer(ctx, req.ProducerID, req.ProducerEpoch)
	if err != nil {
		resp.ErrorCode = errCode(err)
		if resp.ErrorCode == kerr.InvalidProducerEpoch.Code && req.Version >= 4 {
			resp.ErrorCode = kerr.ProducerFenced.Code
		}
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	return resp
}
