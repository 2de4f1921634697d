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
// Deviations: a producer that asks to bump the epoch of its id (v3+,
// KIP-360) gets a new id instead, which resets its sequences just as
// well; a transactional id is refused with INVALID_REQUEST (floe has no
// transactions), which Kafka clients report as a fatal error of
// initTransactions.

func init() { register(kmsg.InitProducerID, 0, 4, async(initProducerID)) }

func initProducerID(ctx context.Context, s *Server, _ *conn, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	id, epoch, err := s.be.KafkaInitProducer(ctx)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	return resp
}
