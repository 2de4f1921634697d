package client

import (
	"context"
	"errors"
	"fmt"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// ProducerID is an idempotent producer's id and epoch (-1, 0: not
// idempotent).
func (p *Producer) ProducerID() (id int64, epoch int32) { return p.producerID, p.producerEpoch }

// BumpEpoch asks InitProducer for the next epoch of the producer's id
// (Kafka's KIP-360): the producer's sequences restart at 0 in every
// partition and batches of its older epoch are fenced wherever the new
// one writes. The producer does not bump by itself: call it after a
// failure that leaves the sequences unusable (an out-of-order sequence
// you choose not to resend) with no request unanswered (Flush or Settle
// first). A stale epoch (another holder bumped the id since) is
// FailedPrecondition PRODUCER_FENCED, and the producer keeps its state;
// an exhausted epoch gets a new id. Not with PartitionAffinity.
func (p *Producer) BumpEpoch() error {
	switch {
	case !p.opts.Idempotent:
		return errors.New("client: BumpEpoch: the producer is not idempotent")
	case p.aff != nil:
		return errors.New("client: BumpEpoch: not with PartitionAffinity")
	case len(p.queue) > 0:
		return fmt.Errorf("client: BumpEpoch: %d requests are unanswered: Flush or Settle first", len(p.queue))
	}
	id, epoch := p.producerID, p.producerEpoch
	resp, err := p.initProducer(&floev1.InitProducerRequest{ProducerId: &id, ProducerEpoch: &epoch})
	if err != nil {
		return fmt.Errorf("client: bump producer %d epoch %d: %w", id, epoch, err)
	}
	p.producerID, p.producerEpoch = resp.GetProducerId(), resp.GetProducerEpoch()
	clear(p.seqs)
	return nil
}

// initProducer calls InitProducer, retrying retriable failures.
func (p *Producer) initProducer(req *floev1.InitProducerRequest) (*floev1.InitProducerResponse, error) {
	var resp *floev1.InitProducerResponse
	err := p.withRetries(func(ctx context.Context) error {
		var err error
		resp, err = p.c.Log.InitProducer(ctx, req)
		return err
	})
	return resp, err
}
