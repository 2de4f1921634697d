package agent_test

import (
	"context"
	"sync/atomic"

	"github.com/floe-broker/floe/metadata"
)

// countingMeta counts the read queries an agent makes.
type countingMeta struct {
	metadata.Store
	find, describe, states, listOffset atomic.Int64
}

func (c *countingMeta) FindBatches(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	c.find.Add(1)
	return c.Store.FindBatches(ctx, topicID, partition, offset, maxBytes)
}
func (c *countingMeta) DescribeTopic(ctx context.Context, name string) (metadata.TopicDescription, error) {
	c.describe.Add(1)
	return c.Store.DescribeTopic(ctx, name)
}
func (c *countingMeta) PartitionStates(ctx context.Context, id int64) ([]metadata.PartitionState, error) {
	c.states.Add(1)
	return c.Store.PartitionStates(ctx, id)
}
func (c *countingMeta) ListOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error) {
	c.listOffset.Add(1)
	return c.Store.ListOffset(ctx, topicID, partition, spec, ts)
}
