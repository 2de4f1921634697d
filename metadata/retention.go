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
	// RawMs is retention.raw.ms when HasRaw (the topic sets it): how long
	// the raw files of offsets the table holds are kept (Raw).
	RawMs  int64
	HasRaw bool
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
	if err := parseRawRetention(&r, cfg); err != nil {
		return r, err
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

	// RetentionPass advances the log start offsets of the topic's
	// partitions as RetentionRule says: past the batches entirely older
	// than r.Ms (by append time, the store's clock; at most RetentionScan
	// batches a pass) or beyond r.Bytes counted from the head, never past
	// r.Hold. It looks at the partitions of known (nil: every partition
	// with records), using what known says of their bytes so that a
	// partition under r.Bytes is not scanned again (only the batches
	// since known's high watermark are summed), in a few set-based
	// statements for the whole topic, whatever its partition count. It
	// returns a check of each partition it looked at. ApplyRetention is
	// RetentionPass of every partition.
	RetentionPass(ctx context.Context, topicID int64, r Retention, known []RetentionKnown) ([]RetentionCheck, error)

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

// RetentionScan bounds the batches time retention reads from a
// partition's log start in one pass: a partition with more expired
// batches than this advances over several passes.
const RetentionScan = 10000

// RetentionKnown is what a caller of RetentionPass knows of a partition:
// its batches from the log start below HighWatermark hold at most Bytes
// bytes (HighWatermark < 0: nothing known; they are counted).
type RetentionKnown struct {
	Partition     int32
	HighWatermark int64
	Bytes         int64
}

// RetentionCheck is what RetentionPass found of a partition.
type RetentionCheck struct {
	State PartitionState // after the pass
	Moved bool           // the log start moved
	// YoungMs is the append time (unix ms, the store's clock) of the
	// first batch time retention kept: the partition's log start may move
	// again by time at YoungMs + retention.ms. 0 when none was kept or
	// r.Ms < 0.
	YoungMs int64
	// Cut: time retention stopped at RetentionScan batches, all expired:
	// more may go at once.
	Cut bool
	// KeptBytes bounds the bytes of the batches from State's log start
	// below State.HighWatermark (at most; exact after a cut by size);
	// -1 when r.Bytes < 0 (not counted).
	KeptBytes int64
}

// ApplyRetention is s.RetentionPass of every partition of the topic; it
// returns the partitions whose log start offset moved, with their new
// state.
func ApplyRetention(ctx context.Context, s RetentionStore, topicID int64, r Retention) ([]PartitionState, error) {
	checks, err := s.RetentionPass(ctx, topicID, r, nil)
	var moved []PartitionState
	for _, c := range checks {
		if c.Moved {
			moved = append(moved, c.State)
		}
	}
	return moved, err
}

// RetentionBatch is a batch as retention sees it.
type RetentionBatch struct {
	BaseOffset, LastOffset, ByteLength int64
	AppendMs                           int64 // unix ms, the store's clock
}

// RetentionRule is where one retention pass puts a partition's log
// start: batches are the partition's live batches (last offset at or
// after st's log start, base offset below its high watermark) in offset
// order, cutoffMs is now - r.Raw().Ms by the store's clock (the time
// limit of the raw files: retention.raw.ms where a table holds them). The time cursor
// passes the leading batches appended before cutoffMs among the first
// RetentionScan (TimeRetentionCursor); the size cut passes the newest
// batch that makes the bytes from the head exceed r.Bytes; the target is
// the furthest of them, within the high watermark and r.Hold
// (RetentionTarget). The backends compute the same in SQL, held to this
// rule by the conformance suite (metadatatest).
func RetentionRule(st PartitionState, batches []RetentionBatch, r Retention, cutoffMs int64) int64 {
	r = r.Raw()
	var timeCursor, sizeCut int64
	if r.Ms >= 0 {
		window := batches[:min(len(batches), RetentionScan)]
		var first, last *int64
		for i := range window {
			if window[i].AppendMs >= cutoffMs {
				first = &window[i].BaseOffset
				break
			}
		}
		if len(window) > 0 {
			last = &window[len(window)-1].LastOffset
		}
		timeCursor = TimeRetentionCursor(first, last, int64(len(window)), RetentionScan, st.HighWatermark)
	}
	if r.Bytes >= 0 {
		var sum int64
		for i := len(batches) - 1; i >= 0; i-- {
			if sum += batches[i].ByteLength; sum > r.Bytes {
				sizeCut = batches[i].LastOffset + 1
				break
			}
		}
	}
	return RetentionTarget(st, timeCursor, sizeCut, r.Hold)
}

// RetentionTarget combines a partition's time cursor and size cut (0:
// none) into its new log start: the furthest of them and its log start,
// never past its high watermark nor hold (HoldLogStart).
func RetentionTarget(st PartitionState, timeCursor, sizeCut int64, hold map[int32]int64) int64 {
	target := min(max(st.LogStartOffset, timeCursor, sizeCut), st.HighWatermark)
	return max(HoldLogStart(target, st.Partition, hold), st.LogStartOffset)
}

// NeedsSizeCut reports whether a partition whose batches from the log
// start hold at most known bytes, plus added since, must be scanned for
// its size cut under a limit of bytes (-1: unlimited).
func NeedsSizeCut(known, added, bytes int64) bool {
	return bytes >= 0 && known+added > bytes
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
