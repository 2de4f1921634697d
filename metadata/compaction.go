package metadata

import (
	"context"
	"fmt"
	"time"
)

// Keyed compaction configuration keys and their defaults (Kafka's names).
const (
	// ConfigDeleteRetentionMs is how long a tombstone (a record with a
	// null value) of a compacted topic stays readable, from its append.
	ConfigDeleteRetentionMs = "delete.retention.ms"
	// ConfigMinCompactionLagMs is how old a batch must be (from its
	// append) before it is compacted.
	ConfigMinCompactionLagMs = "min.compaction.lag.ms"

	DefaultDeleteRetentionMs  int64 = 24 * 60 * 60 * 1000
	DefaultMinCompactionLagMs int64 = 0
)

// Compaction is a topic's parsed keyed-compaction configuration.
type Compaction struct {
	Enabled         bool          // cleanup.policy is compact or compact,delete
	DeleteRetention time.Duration // tombstones older than this are removed
	MinLag          time.Duration // younger batches are not compacted
}

// ParseCompaction reads cleanup.policy, delete.retention.ms and
// min.compaction.lag.ms from a topic's config, with their defaults for
// absent keys. The durations are milliseconds or Go durations, >= 0.
func ParseCompaction(cfg map[string]string) (Compaction, error) {
	c := Compaction{DeleteRetention: time.Duration(DefaultDeleteRetentionMs) * time.Millisecond,
		MinLag: time.Duration(DefaultMinCompactionLagMs) * time.Millisecond}
	switch cfg[ConfigCleanupPolicy] {
	case "compact", "compact,delete", "delete,compact":
		c.Enabled = true
	}
	for _, k := range []struct {
		key string
		dst *time.Duration
	}{{ConfigDeleteRetentionMs, &c.DeleteRetention}, {ConfigMinCompactionLagMs, &c.MinLag}} {
		v, ok := cfg[k.key]
		if !ok {
			continue
		}
		n, err := parseConfigMs(k.key, v, false)
		if err != nil {
			return c, err
		}
		*k.dst = durationMs(n)
	}
	return c, nil
}

// durationMs converts ms to a Duration, saturating.
func durationMs(ms int64) time.Duration {
	if ms > int64(maxDuration/time.Millisecond) {
		return maxDuration
	}
	return time.Duration(ms) * time.Millisecond
}

const maxDuration = time.Duration(1<<63 - 1)

// CompactBatch is a live batch row below a partition's cleaning point.
type CompactBatch struct {
	BaseOffset  int64
	LastOffset  int64 // the original range end; RecordCount may be smaller
	RecordCount int32
	FileID      int64
	FileKey     string
	FileSize    int64
	ByteOffset  int64
	ByteLength  int64
	AppendTime  int64 // unix ms, the store's clock
}

// CompactSection is what CompactionSection returns: the partition's
// state, the store's clock, the cleaning point (batches at or after it are
// the uncompacted head, never touched) and the live batches below it, in
// offset order.
type CompactSection struct {
	State         PartitionState
	Now           time.Time
	CleaningPoint int64
	Batches       []CompactBatch
	Cut           bool // the byte budget stopped the list before the cleaning point
	// YoungMs is the append time (unix ms) of the batch min.compaction.lag
	// stopped the section at (0: none did): the section grows by itself
	// once it is YoungMs + the lag, without a new batch.
	YoungMs int64
}

// RewrittenBatch is one batch row a compaction writes into its new file.
type RewrittenBatch struct {
	BaseOffset   int64
	LastOffset   int64
	ByteOffset   int64 // in the new file
	ByteLength   int64
	RecordCount  int32
	MaxTimestamp int64
}

// BatchRewrite replaces one batch row (identified as it was read: its
// offsets, file and position) by Into, 0 or more rows of the new file
// within [BaseOffset, LastOffset], in offset order, that keep its append
// time.
type BatchRewrite struct {
	TopicID        int64
	Partition      int32
	BaseOffset     int64
	LastOffset     int64
	FromFileID     int64
	FromByteOffset int64
	Into           []RewrittenBatch
}

// CompactionCommit is a compaction's new file (Key "" when no batch
// survives) and the rows it replaces.
type CompactionCommit struct {
	Key      string
	Size     int64
	Rewrites []BatchRewrite
}

// CompactionResult counts what CommitCompaction did.
type CompactionResult struct {
	Replaced    int // source rows replaced (those gone or moved meanwhile are skipped)
	Rows        int // rows written into the new file
	FilesMarked int // files left without batches, marked 'deleting'
}

// CompactionStore is the metadata side of keyed compaction.
type CompactionStore interface {
	// CompactionSection returns the partition's live batches (last offset
	// at or after the log start) below its cleaning point: the base offset
	// of its last batch (the active tail is never compacted), lowered to
	// the first batch appended less than minLag ago (the store's clock).
	// The list stops once it holds maxBytes of batches (at least one).
	CompactionSection(ctx context.Context, topicID int64, partition int32, minLag time.Duration, maxBytes int64) (CompactSection, error)
	// CommitCompaction records the new file and, in one transaction,
	// replaces each rewritten row that still is as it was read (else that
	// rewrite is skipped), then marks 'deleting' the old files left
	// without batches (and the new file if none of its rows was written).
	// A key already committed changes nothing.
	CommitCompaction(ctx context.Context, c CompactionCommit) (CompactionResult, error)
}

// Check validates a compaction commit's shape.
func (c CompactionCommit) Check() error {
	if (c.Key == "") != (c.Size == 0) || c.Size < 0 {
		return fmt.Errorf("%w: compaction: key %q, size %d", ErrInvalidCommit, c.Key, c.Size)
	}
	for _, rw := range c.Rewrites {
		at := rw.BaseOffset
		for _, b := range rw.Into {
			if c.Key == "" || b.BaseOffset < at || b.LastOffset < b.BaseOffset || b.LastOffset > rw.LastOffset ||
				b.RecordCount < 1 || int64(b.RecordCount) > b.LastOffset-b.BaseOffset+1 || b.ByteLength <= 0 ||
				b.ByteOffset < 0 || b.ByteOffset+b.ByteLength > c.Size {
				return fmt.Errorf("%w: compaction: batch %+v does not fit row [%d, %d] of a %d-byte file",
					ErrInvalidCommit, b, rw.BaseOffset, rw.LastOffset, c.Size)
			}
			at = b.LastOffset + 1
		}
	}
	return nil
}

// CutSection is the backends' common end of CompactionSection: it keeps
// the batches of all (listed from the log start, below the active tail's
// base offset already in sec.CleaningPoint) up to the first one appended
// less than minLag before sec.Now, and up to maxBytes (at least one
// batch), and sets the cleaning point accordingly. truncated says all
// stopped at a row limit before the tail.
func CutSection(sec *CompactSection, all []CompactBatch, truncated bool, minLag time.Duration, maxBytes int64) {
	young := sec.Now.Add(-minLag).UnixMilli()
	var bytes int64
	for i, b := range all {
		if b.AppendTime > young {
			sec.CleaningPoint, sec.YoungMs = b.BaseOffset, b.AppendTime
			sec.Batches = all[:i]
			return
		}
		if i > 0 && bytes+b.ByteLength > maxBytes {
			sec.CleaningPoint, sec.Batches, sec.Cut = b.BaseOffset, all[:i], true
			return
		}
		bytes += b.ByteLength
	}
	sec.Batches = all
	if truncated && len(all) > 0 {
		sec.CleaningPoint, sec.Cut = all[len(all)-1].LastOffset+1, true
	}
}
