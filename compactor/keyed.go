package compactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// Keyed compaction (cleanup.policy=compact or compact,delete), as Kafka's
// log cleaner does it: below a partition's cleaning point (never the
// active tail, the last batch; never batches younger than
// min.compaction.lag.ms, nor than the compactor's CompactMinAge) only the latest record of each key is kept, and
// a latest record that is a tombstone (null value) only for
// delete.retention.ms after its append. Offsets never change: a
// rewritten Kafka batch keeps its base offset and LastOffsetDelta, its
// records their offset deltas, and a batch left without records
// disappears (a gap between batches). The batch rows that lose records are
// rewritten into one new file (one PUT) and replaced in one metadata
// transaction; their old files then die through the dead-file path
// (marked once no batch references them, deleted after the grace period),
// so that reads in flight finish.
//
// A section holds at most CompactMaxBytes of batches from the log start;
// the latest record of a key is taken within it (so at least the latest
// record of every key is always kept). A partition is read again only
// when compactDue says (keyed_decide.go): its log start or high watermark
// moved, a batch the lag held back aged past it, a tombstone it keeps
// expired, or its last pass rewrote or cut its section (remembered in
// memory: a restarted compactor reads each compacted partition once
// more).

type partKey struct {
	topic int64
	part  int32
}

// compactPass compacts the partitions of the topics whose cleanup.policy
// includes compact: per topic one look at its partitions' states, and a
// section read only of the partitions compactDue picks, so that idle
// partitions cost nothing.
func (c *Compactor) compactPass(ctx context.Context, r *Report) error {
	if c.cfg.CompactMaxBytes <= 0 {
		return nil
	}
	topics, err := c.meta.ListTopics(ctx)
	if err != nil {
		return err
	}
	now, err := c.meta.Now(ctx)
	if err != nil {
		return err
	}
	seen := make(map[partKey]keyedState, len(c.keyed))
	defer func() { c.keyed = seen }() // forget partitions of deleted or no longer compacted topics
	renewed := time.Now()
	for _, t := range topics {
		cp, err := metadata.ParseCompaction(t.Config)
		if err != nil || !cp.Enabled {
			continue
		}
		states, err := c.meta.PartitionStates(ctx, t.ID)
		if errors.Is(err, metadata.ErrTopicNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("topic %s: %w", t.Name, err)
		}
		for _, ps := range states {
			k := partKey{t.ID, ps.Partition}
			prev, ok := c.keyed[k]
			if !compactDue(prev, ok, ps, now.UnixMilli()) {
				if ok {
					seen[k] = prev
				}
				continue
			}
			st, err := c.compactPartition(ctx, t, ps.Partition, cp, r)
			if errors.Is(err, metadata.ErrTopicNotFound) || errors.Is(err, metadata.ErrPartitionNotFound) {
				break // deleted meanwhile
			}
			if err != nil {
				return fmt.Errorf("topic %s partition %d: %w", t.Name, ps.Partition, err)
			}
			seen[k] = st
			if renewDue(renewed, time.Now(), c.cfg.LeaseTTL) {
				if err := c.renew(ctx, JobCompact); err != nil {
					return err
				}
				renewed = time.Now()
			}
		}
	}
	return nil
}

// compactPartition compacts one partition's section and returns what it
// saw.
func (c *Compactor) compactPartition(ctx context.Context, t metadata.Topic, p int32, cp metadata.Compaction, r *Report) (keyedState, error) {
	minLag := max(cp.MinLag, c.cfg.CompactMinAge)
	sec, err := c.meta.CompactionSection(ctx, t.ID, p, minLag, c.cfg.CompactMaxBytes)
	if err != nil {
		return keyedState{}, err
	}
	now := sec.Now.UnixMilli()
	st := keyedState{logStart: sec.State.LogStartOffset, hw: sec.State.HighWatermark, cut: sec.Cut}
	if sec.YoungMs > 0 {
		st.due = sec.YoungMs + minLag.Milliseconds()
	}
	if len(sec.Batches) == 0 {
		return st, nil
	}
	raw, err := c.readSection(ctx, sec.Batches)
	if err != nil {
		return keyedState{}, err
	}
	var recs []keyedRecord
	for i, b := range sec.Batches {
		err := eachKafkaBatch(raw[i], b.BaseOffset, func(base int64, info kbatch.Info, kb []byte) error {
			_, krs, err := kbatch.DecodeStored(kb, 0)
			for _, kr := range krs {
				recs = append(recs, keyedRecord{Offset: base + kr.Offset - info.BaseOffset, Key: kr.Key, Tombstone: kr.Value == nil, AppendTime: b.AppendTime})
			}
			return err
		})
		if err != nil {
			return keyedState{}, fmt.Errorf("batch %d of %s: %w", b.BaseOffset, b.FileKey, err)
		}
	}
	latest := latestByKey(recs)
	st.due = earliestDue(st.due, tombstoneDue(recs, latest, now, cp.DeleteRetention))
	w := logfile.NewWriter(0)
	var (
		rewrites []metadata.BatchRewrite
		removed  int
	)
	for i, b := range sec.Batches {
		rw := metadata.BatchRewrite{TopicID: t.ID, Partition: p, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset,
			FromFileID: b.FileID, FromByteOffset: b.ByteOffset}
		var pending []func() error // appends, done only if the row loses records
		changed := false
		err := eachKafkaBatch(raw[i], b.BaseOffset, func(base int64, info kbatch.Info, kb []byte) error {
			out, kept, err := kbatch.Filter(kb, 0, func(kr kbatch.Record) bool {
				return survives(keyedRecord{Offset: base + kr.Offset - info.BaseOffset, Key: kr.Key, Tombstone: kr.Value == nil,
					AppendTime: b.AppendTime}, latest, now, cp.DeleteRetention)
			})
			if err != nil {
				return err
			}
			if kept < int(info.RecordCount) {
				changed = true
				removed += int(info.RecordCount) - kept
			}
			if out == nil {
				return nil
			}
			pending = append(pending, func() error {
				e, err := w.AppendStored(t.ID, p, out)
				if err != nil {
					return err
				}
				last := base + int64(info.LastOffsetDelta)
				if n := len(rw.Into); n > 0 && rw.Into[n-1].LastOffset+1 == base && rw.Into[n-1].ByteOffset+rw.Into[n-1].ByteLength == e.ByteOffset {
					run := &rw.Into[n-1] // extend the run, as the batcher commits them
					run.LastOffset, run.ByteLength, run.RecordCount = last, run.ByteLength+e.ByteLength, run.RecordCount+e.RecordCount
					run.MaxTimestamp = max(run.MaxTimestamp, e.MaxTimestamp)
					return nil
				}
				rw.Into = append(rw.Into, metadata.RewrittenBatch{BaseOffset: base, LastOffset: last, ByteOffset: e.ByteOffset,
					ByteLength: e.ByteLength, RecordCount: e.RecordCount, MaxTimestamp: e.MaxTimestamp})
				return nil
			})
			return nil
		})
		if err != nil {
			return keyedState{}, fmt.Errorf("batch %d of %s: %w", b.BaseOffset, b.FileKey, err)
		}
		if !changed {
			continue
		}
		for _, fn := range pending {
			if err := fn(); err != nil {
				return keyedState{}, err
			}
		}
		rewrites = append(rewrites, rw)
	}
	if len(rewrites) == 0 {
		return st, nil
	}
	if err := c.commitCompaction(ctx, w, rewrites, r); err != nil {
		return keyedState{}, err
	}
	r.RecordsRemoved += removed
	c.log.Info("partition compacted", "topic", t.Name, "partition", p, "rows", len(rewrites), "records_removed", removed,
		"cleaning_point", sec.CleaningPoint)
	// The section changed: read it again next pass (more may go once
	// the next rows join it).
	st.again = true
	return st, nil
}

// commitCompaction uploads the rewritten rows' file (unless none survives)
// and replaces the rows in one metadata transaction.
func (c *Compactor) commitCompaction(ctx context.Context, w *logfile.Writer, rewrites []metadata.BatchRewrite, r *Report) error {
	cm := metadata.CompactionCommit{Rewrites: rewrites}
	// The new object is unknown to the metadata until its commit: the
	// upload and the commit must be over well before the orphan job may
	// take it for an orphan (as for merges).
	dctx, cancel := context.WithTimeout(ctx, mergeDeadline(c.cfg.OrphanAge, c.cfg.Grace))
	defer cancel()
	if len(w.Entries()) > 0 {
		data := w.Finish()
		id := ulid.Make()
		cm.Key, cm.Size = fmt.Sprintf("%s%02x/%s", c.cfg.Prefix, id[15], id.String()), int64(len(data))
		if err := c.store.Put(dctx, cm.Key, data, objectstore.PutOptions{IfAbsent: true}); err != nil {
			return fmt.Errorf("upload compacted file: %w", err)
		}
	}
	if err := c.renew(dctx, JobCompact); err != nil {
		return err // the uploaded file is an orphan
	}
	if err := dctx.Err(); err != nil {
		return fmt.Errorf("compacted file %s not committed (an orphan): deadline passed: %w", cm.Key, err)
	}
	res, err := c.meta.CommitCompaction(dctx, cm)
	if err != nil {
		return fmt.Errorf("commit compacted file %s (an orphan unless committed): %w", cm.Key, err)
	}
	r.BatchesCompacted += res.Replaced
	r.FilesMarked += res.FilesMarked
	c.m.marked.Add(float64(res.FilesMarked))
	return nil
}

// eachKafkaBatch walks the Kafka batches of a row's bytes, each with the
// absolute offset of its first offset (they span consecutive ranges from
// the row's base offset).
func eachKafkaBatch(row []byte, base int64, fn func(base int64, info kbatch.Info, kb []byte) error) error {
	return kbatch.SplitStored(row, func(kb []byte) error {
		info, err := kbatch.ParseStored(kb)
		if err != nil {
			return err
		}
		if err := fn(base, info, kb); err != nil {
			return err
		}
		base += int64(info.LastOffsetDelta) + 1
		return nil
	})
}
