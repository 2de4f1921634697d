package agent

import (
	"context"
	"time"
)

// KafkaExpireProducerEpochs forgets at most limit producer ids not bumped
// for after (the Kafka listener's producer id expiry).
func (a *Agent) KafkaExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error) {
	n, err := a.meta.ExpireProducerEpochs(ctx, after, limit)
	return n, toStatus(err)
}
