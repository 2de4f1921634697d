package compactor

import (
	"context"
	"fmt"
	"sort"

	"github.com/oklog/ulid/v2"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// planMerge chooses what one merge writes: the live batches of the
// candidate files (oldest first, as MergeCandidates returns them) until
// their bytes reach target, at least two files, ordered by topic,
// partition and offset so that a partition's batches are adjacent. It
// returns nil when fewer than two files are worth merging.
func planMerge(cands []metadata.MergeBatch, target int64) []metadata.MergeBatch {
	var (
		out   []metadata.MergeBatch
		bytes int64
		files int
	)
	for i := 0; i < len(cands); {
		j := i
		var fb int64
		for j < len(cands) && cands[j].FileID == cands[i].FileID {
			fb += cands[j].ByteLength
			j++
		}
		if files >= 2 && bytes+fb > target {
			break
		}
		out = append(out, cands[i:j]...)
		bytes += fb
		files++
		i = j
	}
	if files < 2 {
		return nil
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.TopicID != y.TopicID {
			return x.TopicID < y.TopicID
		}
		if x.Partition != y.Partition {
			return x.Partition < y.Partition
		}
		return x.BaseOffset < y.BaseOffset
	})
	return out
}

// mergePass merges the live batches of small, aged files into one file:
// the batches' bytes are copied unchanged (same records, same offsets),
// the merged file is uploaded under a new key and the batches repointed in
// one metadata transaction; the old files then die as usual (marked, and
// deleted after the grace period). A merged file whose commit fails is an
// orphan, collected later.
func (c *Compactor) mergePass(ctx context.Context, r *Report) error {
	if c.cfg.MergeSmallBytes <= 0 {
		return nil
	}
	cands, err := c.meta.MergeCandidates(ctx, c.cfg.MergeSmallBytes, c.cfg.MergeMinAge, c.cfg.MergeMaxFiles)
	if err != nil {
		return err
	}
	plan := planMerge(cands, c.cfg.MergeTargetBytes)
	if plan == nil {
		return nil
	}
	data := map[int64][]byte{}
	var size int64
	for _, b := range plan {
		if _, ok := data[b.FileID]; ok {
			continue
		}
		d, err := c.store.Get(ctx, b.FileKey, 0, -1)
		if err != nil {
			return fmt.Errorf("read %s: %w", b.FileKey, err)
		}
		if _, err := logfile.ReadIndex(d); err != nil {
			return fmt.Errorf("file %s does not check, not merged: %w", b.FileKey, err)
		}
		data[b.FileID] = d
		size += int64(len(d))
	}
	w := logfile.NewWriter(int(size))
	moves := make([]metadata.BatchMove, 0, len(plan))
	for _, b := range plan {
		d := data[b.FileID]
		if b.ByteOffset < 0 || b.ByteLength <= 0 || b.ByteOffset+b.ByteLength > int64(len(d)) {
			return fmt.Errorf("file %s: batch [%d, +%d) outside its %d bytes", b.FileKey, b.ByteOffset, b.ByteLength, len(d))
		}
		first := int64(-1)
		// Stored batches: those of compacted topics may hold fewer records
		// than offsets.
		err := kbatch.SplitStored(d[b.ByteOffset:b.ByteOffset+b.ByteLength], func(kb []byte) error {
			e, err := w.AppendStored(b.TopicID, b.Partition, kb)
			if first < 0 {
				first = e.ByteOffset
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("file %s: batch at %d: %w", b.FileKey, b.ByteOffset, err)
		}
		moves = append(moves, metadata.BatchMove{TopicID: b.TopicID, Partition: b.Partition, BaseOffset: b.BaseOffset,
			FromFileID: b.FileID, FromByteOffset: b.ByteOffset, ByteOffset: first})
	}
	out := w.Finish()
	id := ulid.Make()
	key := fmt.Sprintf("%s%02x/%s", c.cfg.Prefix, id[15], id.String())
	// The merged object is unknown to the metadata until its commit: the
	// upload and the commit must be over well before the orphan job may
	// take it for an orphan (OrphanAge after its upload).
	dctx, cancel := context.WithTimeout(ctx, mergeDeadline(c.cfg.OrphanAge, c.cfg.Grace))
	defer cancel()
	if err := c.store.Put(dctx, key, out, objectstore.PutOptions{IfAbsent: true}); err != nil {
		return fmt.Errorf("upload merged file: %w", err)
	}
	if err := c.renew(dctx, JobMerge); err != nil {
		return err // the uploaded file is an orphan
	}
	if err := dctx.Err(); err != nil {
		return fmt.Errorf("merged file %s not committed (an orphan): deadline passed: %w", key, err)
	}
	res, err := c.meta.CommitMerge(dctx, metadata.MergeCommit{Key: key, Size: int64(len(out)), Moves: moves})
	if err != nil {
		return fmt.Errorf("commit merged file %s (an orphan unless committed): %w", key, err)
	}
	r.FilesMerged += len(data)
	r.BatchesMoved += res.Moved
	r.FilesMarked += res.FilesMarked
	c.m.merged.Add(float64(len(data)))
	c.m.marked.Add(float64(res.FilesMarked))
	c.log.Info("files merged", "files", len(data), "batches", res.Moved, "key", key, "bytes", len(out))
	return nil
}
