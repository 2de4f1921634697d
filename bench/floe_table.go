package bench

import (
	"context"
	"fmt"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// WaitRawAged waits until the raw files of the topic Setup created aged
// out into its Iceberg table (a topic created with retention.raw.ms, see
// FloeConfig.TopicConfig): every partition's log start, the raw log
// start, at its high watermark. A catch-up read from the start then reads
// the table. It gives up after limit.
func (s *FloeSystem) WaitRawAged(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		d, err := s.clients[0].Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: s.topic})
		if err != nil {
			return fmt.Errorf("bench: describe %s: %w", s.topic, err)
		}
		aged := len(d.GetPartitions()) > 0
		for _, p := range d.GetPartitions() {
			aged = aged && p.GetHighWatermark() > 0 && p.GetLogStartOffset() == p.GetHighWatermark()
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
