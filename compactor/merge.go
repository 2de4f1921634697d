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
// their bytes (live bytes, not the files' sizes: the merge reads and
// allocates only those) reach target, at least two files, ordered by topic,
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
	// Only the live batches' ranges are read (one range GET per run of
	// adjacent live batches of a file), and the merged file is allocated
	// for them: a mostly emptied file costs its live bytes, not its size.
	// Each copied Kafka batch is checked (its CRC) on the way.
	bs := make([]metadata.CompactBatch, len(plan))
	files := map[int64]bool{}
	var live int64
	for i, b := range plan {
		bs[i] = metadata.CompactBatch{FileID: b.FileID, FileKey: b.FileKey, FileSize: b.FileSize, ByteOffset: b.ByteOffset, ByteLength: b.ByteLength}
		files[b.FileID] = true
		live += b.ByteLength
	}
	raw, err := c.readSection(ctx, bs)
	if err != nil {
		return err
	}
	w := logfile.NewWriter(int(live))
	moves := make([]metadata.BatchMove, 0, len(plan))
	for i, b := range plan {
		first := int64(-1)
		// Stored batches: those of compacted topics may hold fewer records
		// than offsets.
		err := kbatch.SplitStored(raw[i], func(kb []byte) error {
			e, err := w.AppendStored(b.TopicID, b.Partition, kb)
			if first < 0 {
				first = e.ByteOffset
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("file %s: batch at %d does not check, not merged: %w", b.FileKey, b.ByteOffset, err)
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
	r.FilesMerged += len(files)
	r.BatchesMoved += res.Moved
	r.FilesMarked += res.FilesMarked
	c.m.merged.Add(float64(len(files)))
	c.m.marked.Add(float64(res.FilesMarked))
	c.log.Info("files merged", "files", len(files), "live_bytes", live, "batches", res.Moved, "key", key, "bytes", len(out))
	return nil
}
