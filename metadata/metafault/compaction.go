package metafault

import (
	"context"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// OpCompaction groups the CompactionStore methods; they share faults.
const OpCompaction Op = "compaction"

// CompactionSection implements metadata.CompactionStore.
func (s *Store) CompactionSection(ctx context.Context, topicID int64, partition int32, minLag time.Duration, maxBytes int64) (metadata.CompactSection, error) {
	return call(ctx, s, OpCompaction, func() (metadata.CompactSection, error) {
		return s.inner.CompactionSection(ctx, topicID, partition, minLag, maxBytes)
	})
}

// CommitCompaction implements metadata.CompactionStore.
func (s *Store) CommitCompaction(ctx context.Context, c metadata.CompactionCommit) (metadata.CompactionResult, error) {
	return call(ctx, s, OpCompaction, func() (metadata.CompactionResult, error) { return s.inner.CommitCompaction(ctx, c) })
}
