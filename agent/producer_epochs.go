package agent

import (
	"context"
	"errors"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// reinitProducer serves InitProducer with a producer id and epoch: the
// next epoch of that id, decided by metadata.DecideProducerInit through
// the store's ReinitProducer (what Kafka's InitProducerId v3+ does).
func (a *Agent) reinitProducer(ctx context.Context, req *floev1.InitProducerRequest) (*floev1.InitProducerResponse, error) {
	if req.ProducerId == nil || req.ProducerEpoch == nil {
		return nil, status.Error(codes.InvalidArgument, "init producer: producer_id and producer_epoch must both be given or both be left out")
	}
	id, e := req.GetProducerId(), req.GetProducerEpoch()
	if id < 0 || e < 0 || e > math.MaxInt16 {
		return nil, status.Errorf(codes.InvalidArgument, "init producer: producer id %d and epoch %d must be >= 0 (epoch at most %d)", id, e, math.MaxInt16)
	}
	newID, epoch, err := a.meta.ReinitProducer(ctx, id, int16(e))
	switch {
	case errors.Is(err, metadata.ErrProducerFenced):
		return nil, statusInfo(codes.FailedPrecondition, ReasonProducerFenced, nil,
			"init producer: epoch %d of producer %d: %v; only the newest epoch may be bumped", e, id, err)
	case errors.Is(err, metadata.ErrInvalidProducerInit):
		return nil, status.Errorf(codes.InvalidArgument, "init producer: %v", err)
	case err != nil:
		return nil, toStatus(err)
	}
	return &floev1.InitProducerResponse{ProducerId: newID, ProducerEpoch: int32(epoch)}, nil
}

// KafkaExpireProducerEpochs forgets at most limit producer ids not bumped
// for after (the Kafka listener's producer id expiry).
func (a *Agent) KafkaExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error) {
	n, err := a.meta.ExpireProducerEpochs(ctx, after, limit)
	return n, toStatus(err)
}
