package agent

import (
	"context"
	"errors"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
)

// findBatches is metadata.Store.FindBatches answered from the index when
// it can, recording the store's answer in it otherwise.
func (a *Agent) findBatches(ctx context.Context, topicID int64, p int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	k := partKey{topicID, p}
	if refs, st, ok := a.index.lookup(k, offset, maxBytes); ok {
		return refs, st, nil
	}
	gen := a.index.begin(k)
	refs, st, err := a.meta.FindBatches(ctx, topicID, p, offset, maxBytes)
	if err != nil {
		return nil, st, err
	}
	a.index.stored(k, gen, refs, st)
	return refs, st, nil
}

// followNotices applies commit notices to the index and wakes their
// readers until ch closes; every IndexPollInterval it re-reads the high
// watermarks of the topics the index tracks, in case a notice was lost.
func (a *Agent) followNotices(ctx context.Context, ch <-chan metadata.Notice) {
	a.index.setLive(true)
	defer a.index.setLive(false)
	poll := time.NewTicker(a.cfg.IndexPollInterval)
	defer poll.Stop()
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				return
			}
			a.index.notice(n)
			a.hub.notify(n)
		case <-poll.C:
			a.pollIndex(ctx)
		}
	}
}

// pollIndex reads the partition states of each tracked topic (one query
// per topic) and wakes the readers of partitions that grew unannounced.
func (a *Agent) pollIndex(ctx context.Context) {
	for _, t := range a.index.topics() {
		states, err := a.meta.PartitionStates(ctx, t)
		if errors.Is(err, metadata.ErrTopicNotFound) {
			// Its readers re-read and learn that the topic is gone; a
			// request naming it looks it up afresh.
			a.topics.dropID(t)
			a.hub.notify(metadata.Notice{Partitions: a.index.dropTopic(t)})
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("read index: partition states unavailable", "topic_id", t, "err", err)
			}
			return
		}
		if grew := a.index.polled(t, states); len(grew) > 0 {
			a.log.Debug("read index: high watermarks grew without a notice", "topic_id", t, "partitions", len(grew))
			a.hub.notify(metadata.Notice{Partitions: grew})
		}
	}
}

// indexCommitted hands this agent's committed batches to the index.
func (a *Agent) indexCommitted(f batcher.CommittedFile) {
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
	a.index.committed(refs)
}
