package metafault

import (
	"context"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// BeatAgent implements metadata.AgentStore (no faults injected).
func (s *Store) BeatAgent(ctx context.Context, a metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error) {
	return s.inner.BeatAgent(ctx, a, ttl)
}

// LeaveAgent implements metadata.AgentStore (no faults injected).
func (s *Store) LeaveAgent(ctx context.Context, id string) error { return s.inner.LeaveAgent(ctx, id) }

// Producers implements metadata.ProducerStore (no faults injected).
func (s *Store) Producers(ctx context.Context, topicID int64, partition int32, limit int) ([]metadata.ProducerInfo, error) {
	return s.inner.Producers(ctx, topicID, partition, limit)
}
