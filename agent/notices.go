package agent

import (
	"context"
	"errors"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// findBatches is metadata.Store.FindBatches answered from the read index
// when it can (readpath.Index.FindBatches).
func (a *Agent) findBatches(ctx context.Context, topicID int64, p int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	return a.index.FindBatches(ctx, a.meta, topicID, p, offset, maxBytes)
}

// followNotices applies commit notices to the index and wakes their
// readers until ch closes; every IndexPollInterval it re-reads the high
// watermarks of the topics the index tracks, in case a notice was lost.
func (a *Agent) followNotices(ctx context.Context, ch <-chan metadata.Notice) {
	a.index.SetLive(true)
	defer a.index.SetLive(false)
	poll := time.NewTicker(a.cfg.IndexPollInterval)
	defer poll.Stop()
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				return
			}
			a.index.Notice(n)
			a.hub.notify(n)
		case <-poll.C:
			a.pollIndex(ctx)
		}
	}
}

// pollIndex reads the partition states of each tracked topic (one query
// per topic) and wakes the readers of partitions that grew unannounced.
func (a *Agent) pollIndex(ctx context.Context) {
	for _, t := range a.index.Topics() {
		states, err := a.meta.PartitionStates(ctx, t)
		if errors.Is(err, metadata.ErrTopicNotFound) {
			// Its readers re-read and learn that the topic is gone; a
			// request naming it looks it up afresh.
			a.topics.dropID(t)
			a.hub.notify(metadata.Notice{Partitions: a.index.DropTopic(t)})
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("read index: partition states unavailable", "topic_id", t, "err", err)
			}
			return
		}
		if grew := a.index.Polled(t, states); len(grew) > 0 {
			a.log.Debug("read index: high watermarks grew without a notice", "topic_id", t, "partitions", len(grew))
			a.hub.notify(metadata.Notice{Partitions: grew})
		}
	}
}
