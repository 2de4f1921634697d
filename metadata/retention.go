package metadata

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Retention configuration keys and their defaults (Kafka's names; -1 means
// unlimited).
const (
	ConfigRetentionMs    = "retention.ms"
	ConfigRetentionBytes = "retention.bytes"
	// ConfigCleanupPolicy is delete (the default), compact, or both
	// ("compact,delete"). A topic whose policy is compact alone is never
	// trimmed by time or size; compact topics are compacted by key (see
	// compaction.go).
	ConfigCleanupPolicy = "cleanup.policy"

	DefaultRetentionMs    int64 = 7 * 24 * 60 * 60 * 1000
	DefaultRetentionBytes int64 = -1
)

var (
	// ErrInvalidConfig refuses a topic config value floe cannot honour.
	ErrInvalidConfig = errors.New("metadata: invalid topic config")
	// ErrInvalidDeleteOffset refuses a DeleteRecords offset past the high
	// watermark (or negative other than DeleteToHighWatermark).
	ErrInvalidDeleteOffset = errors.New("metadata: invalid delete-records offset")
)

// DeleteToHighWatermark asks DeleteRecords to delete every record (Kafka's -1).
const DeleteToHighWatermark int64 = -1

// Retention is a topic's parsed retention configuration. Ms and Bytes are
// -1 when unlimited. Delete is false for a topic whose cleanup.policy is
// compact alone: time and size retention do not apply to it.
type Retention struct {
	Ms     int64
	Bytes  int64
	Delete bool
	// Hold, when non-nil, bounds each partition's log start: retention
	// never moves it past Hold[partition] (0 when absent), the offsets the
	// topic's Iceberg table does not hold yet (HoldLogStart).
	Hold map[int32]int64
}

// ParseRetention reads retention.ms (milliseconds or a duration, -1: for
// ever) and retention.bytes from a topic's config, with their defaults for
// absent keys.
func ParseRetention(cfg map[string]string) (Retention, error) {
	r := Retention{Ms: DefaultRetentionMs, Bytes: DefaultRetentionBytes, Delete: true}
	var err error
	if v, ok := cfg[ConfigCleanupPolicy]; ok {
		switch v {
		case "delete":
		case "compact":
			r.Delete = false
		case "compact,delete", "delete,compact":
		default:
			return r, fmt.Errorf("%w: %s=%q, want delete, compact or compact,delete", ErrInvalidConfig, ConfigCleanupPolicy, v)
		}
	}
	if v, ok := cfg[ConfigRetentionMs]; ok {
		if r.Ms, err = parseConfigMs(ConfigRetentionMs, v, true); err != nil {
			return r, err
		}
	}
	if v, ok := cfg[ConfigRetentionBytes]; ok {
		if r.Bytes, err = parseLimit(ConfigRetentionBytes, v); err != nil {
			return r, err
		}
	}
	return r, nil
}

// parseLimit accepts -1 (unlimited) or 0..MaxInt64.
func parseLimit(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 {
		return 0, fmt.Errorf("%w: %s=%q, want -1 (unlimited) or an integer 0..%d", ErrInvalidConfig, key, v, int64(math.MaxInt64))
	}
	return n, nil
}

// TopicStorage is what a topic's data costs, as the metadata knows it.
type TopicStorage struct {
	// Files holding at least one of the topic's batches, and their total
	// size (a file shared with other topics counts whole).
	Files, FileBytes int64
	// LiveBytes: the topic's readable batches (at or after their
	// partition's log start offset); DeadBytes: its batches below the log
	// start offset that the compactor has not collected yet.
	LiveBytes, DeadBytes int64
	Batches              int64
}

// DeletionQueue is the state of the files waiting to be deleted.
type DeletionQueue struct {
	Files  int64     // files marked 'deleting'
	Bytes  int64     // their total size
	Oldest time.Time // when the oldest was marked; zero when none
}

// DeadFile is a file marked for deletion.
type DeadFile struct {
	ID       int64
	Key      string
	Size     int64
	MarkedAt time.Time
}

// CollectResult counts what one CollectDeadBatches call did.
type CollectResult struct {
	Batches     int // batch rows removed
	FilesMarked int // files marked 'deleting' because none of their batches is left
}

// RetentionStore is the metadata side of retention, deletion and the
// compactor's jobs. Times are the store's clock (PostgreSQL now()).
type RetentionStore interface {
	// AlterTopicConfig sets the keys of set and removes those of remove in
	// the topic's config, validated as at creation, and returns the topic.
	AlterTopicConfig(ctx context.Context, name string, set map[string]string, remove []string) (Topic, error)

	// DeleteRecords moves the partition's log start offset up to offset
	// (DeleteToHighWatermark: to the high watermark); it never moves back.
	// An offset past the high watermark is ErrInvalidDeleteOffset.
	DeleteRecords(ctx context.Context, topicID int64, partition int32, offset int64) (PartitionState, error)

	// ApplyRetention advances the log start offsets of the topic's
	// partitions past the batches entirely older than r.Ms (by append
	// time, the store's clock) or beyond r.Bytes counted from the head,
	// one short transaction per partition. It returns the partitions whose
	// log start offset moved, with their new state.
	ApplyRetention(ctx context.Context, topicID int64, r Retention) ([]PartitionState, error)

	// CollectDeadBatches removes, in one transaction, up to limit batch
	// rows no reader can reach (below their partition's log start offset,
	// or of a deleted topic) and marks 'deleting' the files left without
	// any batch.
	CollectDeadBatches(ctx context.Context, limit int) (CollectResult, error)

	// MarkEmptyFiles sweeps up to limit files with id > afterID, oldest
	// first, and marks 'deleting' those that have no batch and were created
	// more than minAge ago. It returns how many it marked and the id to
	// start the next sweep after (0 once the sweep reached the end).
	MarkEmptyFiles(ctx context.Context, afterID int64, limit int, minAge time.Duration) (marked int, next int64, err error)

	// DeletableFiles returns up to limit files marked 'deleting' at least
	// grace ago, oldest mark first.
	DeletableFiles(ctx context.Context, grace time.Duration, limit int) ([]DeadFile, error)

	// ForgetFiles removes the rows of the given files that are marked
	// 'deleting' (once the object store confirmed their deletion); it
	// returns how many it removed.
	ForgetFiles(ctx context.Context, ids []int64) (int, error)

	// UnknownKeys returns the keys, of those given, that no file row has.
	UnknownKeys(ctx context.Context, keys []string) ([]string, error)

	// Now is the store's clock.
	Now(ctx context.Context) (time.Time, error)

	// AcquireLease takes or renews the lease of job for owner until ttl from
	// now (the store's clock). It returns false when another owner holds an
	// unexpired lease.
	AcquireLease(ctx context.Context, job, owner string, ttl time.Duration) (bool, error)
	// ReleaseLease gives up owner's lease of job (no-op if not held).
	ReleaseLease(ctx context.Context, job, owner string) error
	// JobCursor returns the cursor saved with job's lease ("" if none).
	JobCursor(ctx context.Context, job string) (string, error)
	// SetJobCursor saves job's cursor if owner holds its lease; false if not.
	SetJobCursor(ctx context.Context, job, owner, cursor string) (bool, error)

	// TopicStorage returns what the live topic's data costs.
	TopicStorage(ctx context.Context, topicID int64) (TopicStorage, error)
	// DeletionQueue returns the files waiting for deletion.
	DeletionQueue(ctx context.Context) (DeletionQueue, error)

	MergeStore
}

// CheckConfigChange checks an AlterTopicConfig request's shape: non-empty
// keys, none both set and removed.
func CheckConfigChange(set map[string]string, remove []string) error {
	if len(set) == 0 && len(remove) == 0 {
		return fmt.Errorf("%w: nothing to change", ErrInvalidConfig)
	}
	for k := range set {
		if k == "" {
			return fmt.Errorf("%w: empty key", ErrInvalidConfig)
		}
	}
	for _, k := range remove {
		if k == "" {
			return fmt.Errorf("%w: empty key", ErrInvalidConfig)
		}
		if _, ok := set[k]; ok {
			return fmt.Errorf("%w: key %q both set and removed", ErrInvalidConfig, k)
		}
	}
	return ValidateTopicConfig(set)
}

// ApplyConfigChange returns cfg with set applied and remove removed.
func ApplyConfigChange(cfg, set map[string]string, remove []string) map[string]string {
	out := make(map[string]string, len(cfg)+len(set))
	for k, v := range cfg {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	for _, k := range remove {
		delete(out, k)
	}
	return out
}

// TimeRetentionCursor is where time retention puts a log start offset,
// given a scan of at most limit batches from the one holding the log start:
// first is the base offset of the first batch young enough (nil if none),
// last the last offset of the last batch scanned, n how many were scanned.
// With no young batch, the cursor passes the scanned batches (all of the
// log below hw when the scan was not cut). 0 means "no advance".
func TimeRetentionCursor(first, last *int64, n, limit, hw int64) int64 {
	switch {
	case first != nil:
		return *first
	case n == 0 || last == nil:
		return 0
	case n >= limit:
		return *last + 1
	default:
		return hw
	}
}

// MergeBatch is a live batch of a small file, a candidate for merging.
type MergeBatch struct {
	TopicID    int64
	Partition  int32
	BaseOffset int64
	FileID     int64
	FileKey    string
	FileSize   int64
	ByteOffset int64
	ByteLength int64
}

// BatchMove repoints one batch row from its old file to a merged one.
type BatchMove struct {
	TopicID        int64
	Partition      int32
	BaseOffset     int64
	FromFileID     int64
	FromByteOffset int64
	ByteOffset     int64 // in the merged file; the length is unchanged
}

// MergeCommit is a merged file and the batches it now holds.
type MergeCommit struct {
	Key   string
	Size  int64
	Moves []BatchMove
}

// MergeResult counts what CommitMerge did.
type MergeResult struct {
	Moved       int // batches repointed (those gone meanwhile are skipped)
	FilesMarked int // old files left without batches, marked 'deleting'
}

// MergeStore is the metadata side of merging small files.
type MergeStore interface {
	// MergeCandidates returns the live batches of up to maxFiles committed
	// files smaller than maxSize and created more than minAge ago, oldest
	// file first.
	MergeCandidates(ctx context.Context, maxSize int64, minAge time.Duration, maxFiles int) ([]MergeBatch, error)
	// CommitMerge records the merged file and repoints the moved batches
	// that still point where they did, in one transaction, and marks
	// 'deleting' the old files left without batches (and the merged file
	// if no batch moved). A key already committed changes nothing.
	CommitMerge(ctx context.Context, m MergeCommit) (MergeResult, error)
}
