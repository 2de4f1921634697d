package readpath

import (
	"context"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
)

// BatchFinder is the metadata store's batch lookup (metadata.Store).
type BatchFinder interface {
	FindBatches(ctx context.Context, topicID int64, partition int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error)
}

// FindBatches is store.FindBatches answered from the index when it can,
// recording the store's answer in it otherwise.
func (x *Index) FindBatches(ctx context.Context, store BatchFinder, topicID int64, p int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	k := Key{topicID, p}
	if refs, st, ok := x.Lookup(k, offset, maxBytes); ok {
		return refs, st, nil
	}
	gen := x.Begin(k)
	refs, st, err := store.FindBatches(ctx, topicID, p, offset, maxBytes)
	if err != nil {
		return nil, st, err
	}
	x.Stored(k, gen, refs, st)
	return refs, st, nil
}

// CommittedFile hands this agent's committed batches of f to the index.
func (x *Index) CommittedFile(f batcher.CommittedFile) {
	refs := make([]metadata.BatchRef, 0, len(f.Commits))
	for i, c := range f.Commits {
		r := f.Results[i]
		if r.Err != nil || r.Duplicate {
			continue
		}
		refs = append(refs, metadata.BatchRef{
			TopicID: c.TopicID, Partition: c.Partition,
			BaseOffset: r.BaseOffset, LastOffset: r.BaseOffset + int64(c.RecordCount) - 1,
			FileKey: f.Key, FileSize: int64(len(f.Data)),
			ByteOffset: c.ByteOffset, ByteLength: c.ByteLength,
			RecordCount: c.RecordCount, MaxTimestamp: c.MaxTimestamp, LogAppendTime: r.LogAppendTime,
		})
	}
	x.Committed(refs)
}
