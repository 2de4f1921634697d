package kafka

import (
	"context"
	"time"
)

// Producer id expiry (Kafka's producer.id.expiration.ms): every agent
// with a Kafka listener asks the store, every tenth of
// Config.ProducerIDExpiration (between a second and an hour), to forget
// the producer ids not bumped for that long (metadata.ProducerEpochCutoff).
// A pass removes at most expiryPassRows rows per statement and
// expiryPassStatements statements, so its cost is bounded whatever the
// backlog (the rest goes to the next pass) and does not grow with idle
// rows (the store reads them through an index on the bump time).
const (
	expiryPassRows       = 1000
	expiryPassStatements = 10
)

// expireProducersLoop runs the passes until ctx ends (none when the
// expiration is 0).
func (s *Server) expireProducersLoop(ctx context.Context) {
	after := s.cfg.ProducerIDExpiration
	if after <= 0 {
		return
	}
	t := time.NewTicker(min(max(after/10, time.Second), time.Hour))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		total := 0
		for range expiryPassStatements {
			n, err := s.be.KafkaExpireProducerEpochs(ctx, after, expiryPassRows)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("kafka: producer id expiry failed; retrying later", "err", err)
				}
				break
			}
			total += n
			if n < expiryPassRows {
				break
			}
		}
		if total > 0 {
			s.log.Info("kafka: expired producer ids", "count", total, "after", after)
		}
	}
}
