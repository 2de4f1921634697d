package compactor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// retentionPass moves the topics' log starts, collects what became
// unreachable in bounded transactions, and sweeps one page of files for
// ones without batches.
func (c *Compactor) retentionPass(ctx context.Context, r *Report) error {
	topics, err := c.meta.ListTopics(ctx)
	if err != nil {
		return err
	}
	var (
		names   []string
		storage []metadata.TopicStorage
	)
	now, err := c.meta.Now(ctx)
	if err != nil {
		return err
	}
	seen := make(map[int64]topicRetention, len(c.retained))
	defer func() { c.retained = seen }() // forget deleted topics and changed configs
	renewed := time.Now()
	for _, t := range topics {
		ret, err := metadata.ParseRetention(t.Config)
		if err != nil {
			// Stored before configs were validated: leave it alone.
			c.log.Warn("topic retention config ignored", "topic", t.Name, "err", err)
			continue
		}
		if !ret.Delete {
			continue // cleanup.policy=compact: not trimmed, only compacted by key (keyed.go)
		}
		if ret.Hold, err = c.icebergHold(ctx, t); err != nil {
			// Retention waits for the table: without its watermark, wait.
			c.log.Warn("topic retention waits: table watermark unknown", "topic", t.Name, "err", err)
			continue
		}
		// The raw files' retention: retention.raw.ms where the table holds
		// their offsets (metadata.Retention.Raw); the table's own
		// retention bounds the rest (iceberg.retention.ms).
		moved, tr, err := c.retainTopic(ctx, t, ret.Raw(), now.UnixMilli())
		if errors.Is(err, metadata.ErrTopicNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("topic %s: %w", t.Name, err)
		}
		seen[t.ID] = tr
		for _, st := range moved {
			c.log.Debug("log start moved", "topic", t.Name, "partition", st.Partition, "log_start", st.LogStartOffset)
		}
		r.Advanced += len(moved)
		c.m.advances.Add(float64(len(moved)))
		if renewDue(renewed, time.Now(), c.cfg.LeaseTTL) {
			if err := c.renew(ctx, JobRetention); err != nil {
				return err
			}
			renewed = time.Now()
		}
	}
	for step := 0; ; step++ {
		res, err := c.meta.CollectDeadBatches(ctx, c.cfg.BatchLimit)
		if err != nil {
			return err
		}
		r.Batches += res.Batches
		r.FilesMarked += res.FilesMarked
		c.m.collected.Add(float64(res.Batches))
		c.m.marked.Add(float64(res.FilesMarked))
		if !collectMore(res.Batches, c.cfg.BatchLimit, step+1, c.cfg.MaxSteps) {
			break
		}
		if err := c.renew(ctx, JobRetention); err != nil {
			return err
		}
	}
	if err := c.sweepEmpty(ctx, r); err != nil {
		return err
	}
	if c.cfg.TopicMetrics && time.Since(c.topicsSeen) >= c.cfg.TopicMetricsInterval {
		c.topicsSeen = time.Now()
		for _, t := range topics {
			st, err := c.meta.TopicStorage(ctx, t.ID)
			if errors.Is(err, metadata.ErrTopicNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			names, storage = append(names, t.Name), append(storage, st)
		}
		c.m.setTopics(names, storage)
	}
	return nil
}

// retainTopic moves t's log starts under ret: it looks only at the
// partitions retentionDue picks from their states (one statement for the
// topic) and what the last pass learnt, in one RetentionPass for them.
// It returns the partitions whose log start moved and what it learnt.
func (c *Compactor) retainTopic(ctx context.Context, t metadata.Topic, ret metadata.Retention, nowMs int64) ([]metadata.PartitionState, topicRetention, error) {
	prev, ok := c.retained[t.ID]
	if !ok || prev.ms != ret.Ms || prev.bytes != ret.Bytes {
		prev = topicRetention{ms: ret.Ms, bytes: ret.Bytes}
	}
	tr := topicRetention{ms: ret.Ms, bytes: ret.Bytes, parts: map[int32]partRetention{}}
	states, err := c.meta.PartitionStates(ctx, t.ID)
	if err != nil {
		return nil, tr, err
	}
	var known []metadata.RetentionKnown
	for _, st := range states {
		pr, seen := prev.parts[st.Partition]
		if retentionDue(pr, seen, st, ret, nowMs) {
			known = append(known, retentionKnown(pr, seen, st.Partition))
		} else if seen && st.LogStartOffset < st.HighWatermark {
			tr.parts[st.Partition] = pr
		}
	}
	if len(known) == 0 {
		return nil, tr, nil
	}
	checks, err := c.meta.RetentionPass(ctx, t.ID, ret, known)
	if err != nil {
		return nil, tr, err
	}
	var moved []metadata.PartitionState
	for _, ch := range checks {
		if ch.Moved {
			moved = append(moved, ch.State)
		}
		if ch.State.LogStartOffset < ch.State.HighWatermark {
			tr.parts[ch.State.Partition] = learnRetention(ch, ret, nowMs)
		}
	}
	return moved, tr, nil
}

// sweepEmpty marks one page of files that have no batch (every batch of
// their commit refused, or a topic deleted by an earlier release), resuming
// from the cursor saved with the lease.
func (c *Compactor) sweepEmpty(ctx context.Context, r *Report) error {
	cur, err := c.meta.JobCursor(ctx, JobRetention)
	if err != nil {
		return err
	}
	after, _ := strconv.ParseInt(cur, 10, 64)
	n, next, err := c.meta.MarkEmptyFiles(ctx, max(after, 0), c.cfg.BatchLimit, c.cfg.Grace)
	if err != nil {
		return err
	}
	r.FilesMarked += n
	c.m.marked.Add(float64(n))
	_, err = c.meta.SetJobCursor(ctx, JobRetention, c.cfg.Owner, strconv.FormatInt(next, 10))
	return err
}

// deletionPass deletes the files whose grace period has passed, and
// forgets those whose delete the store confirmed.
func (c *Compactor) deletionPass(ctx context.Context, r *Report) error {
	files, err := c.meta.DeletableFiles(ctx, c.cfg.Grace, c.cfg.DeleteLimit)
	if err != nil || len(files) == 0 {
		return err
	}
	var (
		mu        sync.Mutex // protects confirmed, failed, firstErr
		confirmed []int64
		bytes     int64
		failed    int
		firstErr  error
		wg        sync.WaitGroup
		sem       = make(chan struct{}, c.cfg.DeleteConcurrency)
	)
	for _, f := range files {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := c.store.Delete(ctx, f.Key)
			mu.Lock()
			defer mu.Unlock()
			if deleteConfirmed(err) {
				confirmed = append(confirmed, f.ID)
				bytes += f.Size
				return
			}
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("delete %s: %w", f.Key, err)
			}
		}()
	}
	wg.Wait()
	r.DeleteFailures += failed
	c.m.deleteFailures.Add(float64(failed))
	if failed > 0 {
		c.log.Warn("dead file deletes failed; retried next pass", "failed", failed, "of", len(files), "err", firstErr)
	}
	n, err := c.meta.ForgetFiles(ctx, confirmed)
	if err != nil {
		return err
	}
	r.FilesDeleted += n
	r.BytesDeleted += bytes
	c.m.deleted.Add(float64(n))
	c.m.bytesDeleted.Add(float64(bytes))
	return nil
}

// errPageFull stops a listing once a page is full.
var errPageFull = errors.New("compactor: page full")

// orphanPass lists up to OrphanPage objects, from the saved cursor on
// through at most OrphanShards shards, and deletes the objects the metadata
// does not know that are old enough.
func (c *Compactor) orphanPass(ctx context.Context, r *Report) error {
	saved, err := c.meta.JobCursor(ctx, JobOrphans)
	if err != nil {
		return err
	}
	cur := parseOrphanCursor(saved)
	now, err := c.meta.Now(ctx)
	if err != nil {
		return err
	}
	budget := c.cfg.OrphanPage
	for shard := 0; shard < min(c.cfg.OrphanShards, shards) && budget > 0; shard++ {
		next, n, err := c.orphanShard(ctx, cur, budget, now, r)
		if err != nil {
			return err
		}
		budget -= n
		cur = next
		if ok, err := c.meta.SetJobCursor(ctx, JobOrphans, c.cfg.Owner, cur.String()); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("%w: %s", errLeaseLost, JobOrphans)
			}
			return err
		}
	}
	r.OrphanCursor = cur.String()
	return nil
}

// orphanShard lists up to budget objects of cur's shard after its key and
// deletes the due orphans among them. It returns the next cursor and how
// many objects it listed.
func (c *Compactor) orphanShard(ctx context.Context, cur orphanCursor, budget int, now time.Time, r *Report) (orphanCursor, int, error) {
	prefix := cur.prefix(c.cfg.Prefix)
	var page []objectstore.ObjectInfo
	err := c.store.List(ctx, prefix, func(o objectstore.ObjectInfo) error {
		if cur.after != "" && o.Key <= prefix+cur.after {
			return nil
		}
		page = append(page, o)
		if len(page) >= budget {
			return errPageFull
		}
		return nil
	})
	cut := errors.Is(err, errPageFull)
	if err != nil && !cut {
		return cur, 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	r.ObjectsListed += len(page)
	c.m.listed.Add(float64(len(page)))
	keys := make([]string, len(page))
	byKey := make(map[string]objectstore.ObjectInfo, len(page))
	for i, o := range page {
		keys[i] = o.Key
		byKey[o.Key] = o
	}
	unknown, err := c.meta.UnknownKeys(ctx, keys)
	if err != nil {
		return cur, 0, err
	}
	r.OrphansFound += len(unknown)
	c.m.orphansFound.Add(float64(len(unknown)))
	for _, k := range unknown {
		if !orphanDue(byKey[k].LastModified, now, c.cfg.OrphanAge) {
			continue
		}
		if err := c.store.Delete(ctx, k); !deleteConfirmed(err) {
			r.DeleteFailures++
			c.m.deleteFailures.Inc()
			c.log.Warn("orphan delete failed; retried on the next listing", "key", k, "err", err)
			continue
		}
		c.log.Info("orphan deleted", "key", k, "last_modified", byKey[k].LastModified)
		r.OrphansDeleted++
		c.m.orphansDelete.Inc()
	}
	last := ""
	if len(page) > 0 {
		last = page[len(page)-1].Key[len(prefix):]
	}
	return cur.next(cut, last), len(page), nil
}
