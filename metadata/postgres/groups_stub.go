package postgres

import (
	"context"
	"errors"

	"github.com/floe-broker/floe/metadata"
)

// errGroupsTODO marks group methods not implemented yet on this branch.
var errGroupsTODO = errors.New("metadata: consumer groups not implemented yet")

// Heartbeat implements metadata.Store.
func (s *Store) Heartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	return metadata.HeartbeatResponse{}, errGroupsTODO
}

// CommitOffsets implements metadata.Store.
func (s *Store) CommitOffsets(ctx context.Context, req metadata.CommitOffsetsRequest) error {
	return errGroupsTODO
}

// FetchOffsets implements metadata.Store.
func (s *Store) FetchOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) ([]metadata.CommittedOffset, error) {
	return nil, errGroupsTODO
}

// ListGroups implements metadata.Store.
func (s *Store) ListGroups(ctx context.Context) ([]metadata.GroupListing, error) {
	return nil, errGroupsTODO
}

// DescribeGroup implements metadata.Store.
func (s *Store) DescribeGroup(ctx context.Context, group string) (metadata.GroupDescription, error) {
	return metadata.GroupDescription{}, errGroupsTODO
}

// GroupLag implements metadata.Store.
func (s *Store) GroupLag(ctx context.Context, group string) ([]metadata.PartitionLagInput, error) {
	return nil, errGroupsTODO
}

// DeleteGroup implements metadata.Store.
func (s *Store) DeleteGroup(ctx context.Context, group string) error { return errGroupsTODO }

// ResetOffsets implements metadata.Store.
func (s *Store) ResetOffsets(ctx context.Context, req metadata.ResetOffsetsRequest) ([]metadata.OffsetReset, error) {
	return nil, errGroupsTODO
}

// CopyOffsets implements metadata.Store.
func (s *Store) CopyOffsets(ctx context.Context, from, to string) (int, error) {
	return 0, errGroupsTODO
}
