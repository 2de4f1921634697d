package bench

import (
	"context"
	"fmt"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// WaitRawAged waits until the raw files of the topic Setup created aged
// out into its Iceberg table (a topic created with retention.raw.ms, see
// FloeConfig.TopicConfig): the raw log holds no batch (the topic's
// storage), every partition written. (DescribeTopic's log start is the
// table's first offset on such a topic, not the raw log start.) A
// catch-up read from the start then reads the table. It gives up after
// limit.
func (s *FloeSystem) WaitRawAged(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		d, err := s.clients[0].Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: s.topic})
		if err != nil {
			return fmt.Errorf("bench: describe %s: %w", s.topic, err)
		}
		aged := len(d.GetPartitions()) > 0 && d.GetStorage() != nil && d.GetStorage().GetBatches() == 0
		for _, p := range d.GetPartitions() {
			aged = aged && p.GetHighWatermark() > 0
		}
		if aged {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: the raw files of %s did not age out into its table within %v", s.topic, limit)
		case <-time.After(time.Second):
		}
	}
}
