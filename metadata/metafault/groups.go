package metafault

import (
	"context"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// Group operations share these fault groups.
const (
	OpHeartbeat   Op = "heartbeat"    // Heartbeat
	OpGroupCommit Op = "group-commit" // CommitOffsets
	OpGroupRead   Op = "group-read"   // FetchOffsets, ListGroups, DescribeGroup, GroupLag, TopGroupLag, BatchBytes
	OpGroupAdmin  Op = "group-admin"  // DeleteGroup, ResetOffsets, CopyOffsets, ExpireGroups
)

// Heartbeat implements metadata.Store.
func (s *Store) Heartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	return call(ctx, s, OpHeartbeat, func() (metadata.HeartbeatResponse, error) { return s.inner.Heartbeat(ctx, req) })
}

// CommitOffsets implements metadata.Store.
func (s *Store) CommitOffsets(ctx context.Context, req metadata.CommitOffsetsRequest) error {
	_, err := call(ctx, s, OpGroupCommit, func() (struct{}, error) { return struct{}{}, s.inner.CommitOffsets(ctx, req) })
	return err
}

// FetchOffsets implements metadata.Store.
func (s *Store) FetchOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) ([]metadata.CommittedOffset, error) {
	return call(ctx, s, OpGroupRead, func() ([]metadata.CommittedOffset, error) { return s.inner.FetchOffsets(ctx, group, partitions) })
}

// ListGroups implements metadata.Store.
func (s *Store) ListGroups(ctx context.Context) ([]metadata.GroupListing, error) {
	return call(ctx, s, OpGroupRead, func() ([]metadata.GroupListing, error) { return s.inner.ListGroups(ctx) })
}

// DescribeGroup implements metadata.Store.
func (s *Store) DescribeGroup(ctx context.Context, group string) (metadata.GroupDescription, error) {
	return call(ctx, s, OpGroupRead, func() (metadata.GroupDescription, error) { return s.inner.DescribeGroup(ctx, group) })
}

// GroupLag implements metadata.Store.
func (s *Store) GroupLag(ctx context.Context, group string) ([]metadata.PartitionLagInput, error) {
	return call(ctx, s, OpGroupRead, func() ([]metadata.PartitionLagInput, error) { return s.inner.GroupLag(ctx, group) })
}

// DeleteGroup implements metadata.Store.
func (s *Store) DeleteGroup(ctx context.Context, group string) error {
	_, err := call(ctx, s, OpGroupAdmin, func() (struct{}, error) { return struct{}{}, s.inner.DeleteGroup(ctx, group) })
	return err
}

// DeleteOffsets implements metadata.Store.
func (s *Store) DeleteOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) error {
	_, err := call(ctx, s, OpGroupAdmin, func() (struct{}, error) { return struct{}{}, s.inner.DeleteOffsets(ctx, group, partitions) })
	return err
}

// ResetOffsets implements metadata.Store.
func (s *Store) ResetOffsets(ctx context.Context, req metadata.ResetOffsetsRequest) ([]metadata.OffsetReset, error) {
	return call(ctx, s, OpGroupAdmin, func() ([]metadata.OffsetReset, error) { return s.inner.ResetOffsets(ctx, req) })
}

// CopyOffsets implements metadata.Store.
func (s *Store) CopyOffsets(ctx context.Context, from, to string) (int, error) {
	return call(ctx, s, OpGroupAdmin, func() (int, error) { return s.inner.CopyOffsets(ctx, from, to) })
}

// TopGroupLag implements metadata.Store.
func (s *Store) TopGroupLag(ctx context.Context, limit int) ([]metadata.GroupLagInputs, error) {
	return call(ctx, s, OpGroupRead, func() ([]metadata.GroupLagInputs, error) { return s.inner.TopGroupLag(ctx, limit) })
}

// BatchBytes implements metadata.Store.
func (s *Store) BatchBytes(ctx context.Context, ranges []metadata.BatchRange) ([]int64, error) {
	return call(ctx, s, OpGroupRead, func() ([]int64, error) { return s.inner.BatchBytes(ctx, ranges) })
}

// ExpireGroups implements metadata.Store.
func (s *Store) ExpireGroups(ctx context.Context, retention time.Duration) ([]string, error) {
	return call(ctx, s, OpGroupAdmin, func() ([]string, error) { return s.inner.ExpireGroups(ctx, retention) })
}
