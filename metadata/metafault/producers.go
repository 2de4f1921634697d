package metafault

import (
	"context"
	"time"
)

// ReinitProducer implements metadata.ProducerStore (faults as InitProducer's).
func (s *Store) ReinitProducer(ctx context.Context, id int64, epoch int16) (int64, int16, error) {
	type producer struct {
		id    int64
		epoch int16
	}
	p, err := call(ctx, s, OpInitProducer, func() (producer, error) {
		id, epoch, err := s.inner.ReinitProducer(ctx, id, epoch)
		return producer{id, epoch}, err
	})
	return p.id, p.epoch, err
}

// ExpireProducerEpochs implements metadata.ProducerStore (faults as
// InitProducer's).
func (s *Store) ExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error) {
	return call(ctx, s, OpInitProducer, func() (int, error) { return s.inner.ExpireProducerEpochs(ctx, after, limit) })
}
