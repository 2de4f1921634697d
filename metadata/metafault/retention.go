package metafault

import (
	"context"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// OpRetention groups the RetentionStore methods (retention, the file
// lifecycle, leases and storage figures); they share faults.
const OpRetention Op = "retention"

// AlterTopicConfig implements metadata.RetentionStore.
func (s *Store) AlterTopicConfig(ctx context.Context, name string, set map[string]string, remove []string) (metadata.Topic, error) {
	return call(ctx, s, OpRetention, func() (metadata.Topic, error) { return s.inner.AlterTopicConfig(ctx, name, set, remove) })
}

// DeleteRecords implements metadata.RetentionStore.
func (s *Store) DeleteRecords(ctx context.Context, topicID int64, partition int32, offset int64) (metadata.PartitionState, error) {
	return call(ctx, s, OpRetention, func() (metadata.PartitionState, error) {
		return s.inner.DeleteRecords(ctx, topicID, partition, offset)
	})
}

// RetentionPass implements metadata.RetentionStore.
func (s *Store) RetentionPass(ctx context.Context, topicID int64, r metadata.Retention, known []metadata.RetentionKnown) ([]metadata.RetentionCheck, error) {
	return call(ctx, s, OpRetention, func() ([]metadata.RetentionCheck, error) { return s.inner.RetentionPass(ctx, topicID, r, known) })
}

// CollectDeadBatches implements metadata.RetentionStore.
func (s *Store) CollectDeadBatches(ctx context.Context, limit int) (metadata.CollectResult, error) {
	return call(ctx, s, OpRetention, func() (metadata.CollectResult, error) { return s.inner.CollectDeadBatches(ctx, limit) })
}

// MarkEmptyFiles implements metadata.RetentionStore.
func (s *Store) MarkEmptyFiles(ctx context.Context, afterID int64, limit int, minAge time.Duration) (int, int64, error) {
	type swept struct {
		marked int
		next   int64
	}
	r, err := call(ctx, s, OpRetention, func() (swept, error) {
		m, n, err := s.inner.MarkEmptyFiles(ctx, afterID, limit, minAge)
		return swept{m, n}, err
	})
	return r.marked, r.next, err
}

// DeletableFiles implements metadata.RetentionStore.
func (s *Store) DeletableFiles(ctx context.Context, grace time.Duration, limit int) ([]metadata.DeadFile, error) {
	return call(ctx, s, OpRetention, func() ([]metadata.DeadFile, error) { return s.inner.DeletableFiles(ctx, grace, limit) })
}

// ForgetFiles implements metadata.RetentionStore.
func (s *Store) ForgetFiles(ctx context.Context, ids []int64) (int, error) {
	return call(ctx, s, OpRetention, func() (int, error) { return s.inner.ForgetFiles(ctx, ids) })
}

// UnknownKeys implements metadata.RetentionStore.
func (s *Store) UnknownKeys(ctx context.Context, keys []string) ([]string, error) {
	return call(ctx, s, OpRetention, func() ([]string, error) { return s.inner.UnknownKeys(ctx, keys) })
}

// Now implements metadata.RetentionStore.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return call(ctx, s, OpRetention, func() (time.Time, error) { return s.inner.Now(ctx) })
}

// AcquireLease implements metadata.RetentionStore.
func (s *Store) AcquireLease(ctx context.Context, job, owner string, ttl time.Duration) (bool, error) {
	return call(ctx, s, OpRetention, func() (bool, error) { return s.inner.AcquireLease(ctx, job, owner, ttl) })
}

// ReleaseLease implements metadata.RetentionStore.
func (s *Store) ReleaseLease(ctx context.Context, job, owner string) error {
	_, err := call(ctx, s, OpRetention, func() (struct{}, error) { return struct{}{}, s.inner.ReleaseLease(ctx, job, owner) })
	return err
}

// JobCursor implements metadata.RetentionStore.
func (s *Store) JobCursor(ctx context.Context, job string) (string, error) {
	return call(ctx, s, OpRetention, func() (string, error) { return s.inner.JobCursor(ctx, job) })
}

// SetJobCursor implements metadata.RetentionStore.
func (s *Store) SetJobCursor(ctx context.Context, job, owner, cursor string) (bool, error) {
	return call(ctx, s, OpRetention, func() (bool, error) { return s.inner.SetJobCursor(ctx, job, owner, cursor) })
}

// TopicStorage implements metadata.RetentionStore.
func (s *Store) TopicStorage(ctx context.Context, topicID int64) (metadata.TopicStorage, error) {
	return call(ctx, s, OpRetention, func() (metadata.TopicStorage, error) { return s.inner.TopicStorage(ctx, topicID) })
}

// DeletionQueue implements metadata.RetentionStore.
func (s *Store) DeletionQueue(ctx context.Context) (metadata.DeletionQueue, error) {
	return call(ctx, s, OpRetention, func() (metadata.DeletionQueue, error) { return s.inner.DeletionQueue(ctx) })
}

// MergeCandidates implements metadata.MergeStore.
func (s *Store) MergeCandidates(ctx context.Context, maxSize int64, minAge time.Duration, maxFiles int) ([]metadata.MergeBatch, error) {
	return call(ctx, s, OpRetention, func() ([]metadata.MergeBatch, error) {
		return s.inner.MergeCandidates(ctx, maxSize, minAge, maxFiles)
	})
}

// CommitMerge implements metadata.MergeStore.
func (s *Store) CommitMerge(ctx context.Context, m metadata.MergeCommit) (metadata.MergeResult, error) {
	return call(ctx, s, OpRetention, func() (metadata.MergeResult, error) { return s.inner.CommitMerge(ctx, m) })
}
