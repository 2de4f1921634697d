package kafka

import (
	"context"
	"log/slog"
	"time"
)

// Producer id expiry (Kafka's producer.id.expiration.ms): every agent
// (through its Kafka listener, or on its own without one) asks the store, every tenth of
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

// ProducerExpirer forgets producer ids not bumped for a while
// (agent.Agent.KafkaExpireProducerEpochs).
type ProducerExpirer interface {
	KafkaExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error)
}

// expireProducersLoop runs the passes until ctx ends (none when the
// expiration is 0).
func (s *Server) expireProducersLoop(ctx context.Context) {
	ExpireProducerIDs(ctx, s.be, s.cfg.ProducerIDExpiration, s.log)
}

// ExpireProducerIDs runs the expiry passes until ctx ends (none when
// after is 0 or less). A Kafka server runs it; an agent without a Kafka
// listener runs it by itself (gRPC producers bump epochs too, through
// InitProducer), so that producer_epochs stays bounded either way.
func ExpireProducerIDs(ctx context.Context, be ProducerExpirer, after time.Duration, log *slog.Logger) {
	if after <= 0 {
		return
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
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
			n, err := be.KafkaExpireProducerEpochs(ctx, after, expiryPassRows)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("kafka: producer id expiry failed; retrying later", "err", err)
				}
				break
			}
			total += n
			if n < expiryPassRows {
				break
			}
		}
		if total > 0 {
			log.Info("kafka: expired producer ids", "count", total, "after", after)
		}
	}
}
