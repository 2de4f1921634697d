// Package metadata is floe's sequencer and the home of all durable state:
// topics, partitions, files, batches and producer state. It has two
// implementations behind one interface — PostgreSQL (postgres sub-package)
// and SQLite (sqlite sub-package) — which both pass the conformance suite in
// metadatatest.
package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/floe-broker/floe/auth"
)

var (
	ErrTopicExists        = errors.New("metadata: topic already exists")
	ErrTopicNotFound      = errors.New("metadata: topic not found")
	ErrInvalidTopicName   = errors.New("metadata: invalid topic name")
	ErrInvalidPartitions  = errors.New("metadata: invalid partition count")
	ErrPartitionNotFound  = errors.New("metadata: partition not found")
	ErrOutOfOrderSequence = errors.New("metadata: out of order sequence")
	ErrProducerFenced     = errors.New("metadata: producer fenced by a newer epoch")
	ErrInvalidCommit      = errors.New("metadata: invalid file commit")
	ErrClosed             = errors.New("metadata: store closed")
	// ErrUnknownProducer refuses a batch whose producer id was never
	// issued by InitProducer.
	ErrUnknownProducer = errors.New("metadata: unknown producer id")
	// ErrNotApplied wraps a failure after which the operation surely did
	// not take effect: the request never reached the store (connection
	// refused, no connection from the pool) or was refused before it wrote
	// anything. Without it, a CommitFile error is ambiguous: the commit may
	// have landed and its answer been lost.
	ErrNotApplied = errors.New("metadata: not applied")
)

// NotApplied reports whether err, returned by CommitFile, proves that the
// file was not committed. Any other error is ambiguous; retrying the same
// FileCommit (same Key) is always safe and answers with the first commit's
// results if it landed.
func NotApplied(err error) bool {
	return errors.Is(err, ErrNotApplied) || errors.Is(err, ErrInvalidCommit) || errors.Is(err, ErrClosed)
}

// OffsetOutOfRangeError is returned when an offset is outside
// [LogStartOffset, HighWatermark].
type OffsetOutOfRangeError struct {
	Offset         int64
	LogStartOffset int64
	HighWatermark  int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("metadata: offset %d out of range [%d, %d]", e.Offset, e.LogStartOffset, e.HighWatermark)
}

// MaxTopicNameLen is Kafka's limit on topic names.
const MaxTopicNameLen = 249

// ValidateTopicName checks a name like Kafka does: 1..249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
func ValidateTopicName(name string) error {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > MaxTopicNameLen || name == "." || name == ".." {
		return fmt.Errorf("%w: %q must be 1 to %d characters and not '.' or '..'", ErrInvalidTopicName, name, MaxTopicNameLen)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has the character %q; a name takes only letters a-z and A-Z, digits, '.', '_' and '-'",
				ErrInvalidTopicName, name, c)
		}
	}
	return nil
}

// MaxPartitions bounds a topic's partition count.
const MaxPartitions = 100000

// TopicSpec is what CreateTopic needs.
type TopicSpec struct {
	Name       string
	Partitions int32
	Config     map[string]string // free-form (retention.ms, ...), stored as given
}

// Topic is a created topic. ID is assigned by the store, unique for ever
// (a re-created topic of the same name gets a new ID).
type Topic struct {
	ID         int64
	Name       string
	Partitions int32
	Config     map[string]string
	CreatedAt  time.Time
}

// PartitionState is one partition's offsets. HighWatermark is the offset
// the next record will get; LogStartOffset the first readable offset.
type PartitionState struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
}

// TopicDescription is a topic with each partition's state, ordered by partition.
type TopicDescription struct {
	Topic
	PartitionStates []PartitionState
}

// NoSequence marks a batch from a non-idempotent producer.
const NoSequence = -1

// BatchCommit is one record batch inside a file being committed.
type BatchCommit struct {
	TopicID      int64
	Partition    int32
	ByteOffset   int64 // position of the batch in the file
	ByteLength   int64
	RecordCount  int32 // > 0
	MaxTimestamp int64 // unix milliseconds, the batch's max record timestamp
	// Idempotence: ProducerID < 0 (or BaseSequence == NoSequence) means none.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

// FileCommit is one object file and all its batches.
type FileCommit struct {
	Key     string // object key, unique
	Size    int64
	Batches []BatchCommit
}

// MaxCommitFiles bounds the files of one CommitFiles call.
const MaxCommitFiles = 64

// BatchResult is the outcome of one BatchCommit, in the same position.
type BatchResult struct {
	// BaseOffset of the batch: its records hold BaseOffset..BaseOffset+RecordCount-1.
	BaseOffset int64
	// LogAppendTime is the store's clock (PostgreSQL now()) at commit, unix ms.
	LogAppendTime int64
	// Duplicate is true when an idempotent producer retried a batch already
	// committed; BaseOffset is then the original offset and nothing new was written.
	Duplicate bool
	// Err is set when this batch was refused (ErrOutOfOrderSequence,
	// ErrProducerFenced, ErrTopicNotFound, ErrPartitionNotFound); the other
	// batches of the file are committed regardless.
	Err error
}

// BatchRef points at a committed batch.
type BatchRef struct {
	TopicID       int64
	Partition     int32
	BaseOffset    int64
	LastOffset    int64 // BaseOffset + RecordCount - 1
	FileKey       string
	FileSize      int64
	ByteOffset    int64
	ByteLength    int64
	RecordCount   int32
	MaxTimestamp  int64
	LogAppendTime int64
}

// OffsetSpec selects what ListOffset looks up.
type OffsetSpec int

const (
	OffsetEarliest  OffsetSpec = iota // the log start offset
	OffsetLatest                      // the high watermark
	OffsetTimestamp                   // first offset of the first batch whose MaxTimestamp >= ts; the high watermark if none
	// OffsetMaxTimestamp: the first offset of the first batch holding the
	// largest MaxTimestamp of the live log; the high watermark if empty.
	// It reads every batch row of the partition: an admin lookup.
	OffsetMaxTimestamp
)

// Notice announces committed data. Receivers must tolerate lost or merged
// notices (they poll as a fallback).
type Notice struct {
	// Partitions that received data, with their new high watermarks. When
	// All is true the list may be empty or partial: every partition may have
	// changed.
	Partitions []PartitionNotice
	All        bool
	// Batches, optional, are committed batches of the partitions listed,
	// in offset order within a partition, each partition's last one ending
	// at its HighWatermark-1: a reader may use them instead of asking the
	// store (FindBatches). A notice without them says only that the
	// partitions grew.
	Batches []BatchRef
}

// PartitionNotice is one partition's new high watermark.
type PartitionNotice struct {
	TopicID       int64
	Partition     int32
	HighWatermark int64
}

// Store is the sequencer. Implementations are safe for concurrent use by
// many goroutines and, for PostgreSQL, many processes.
type Store interface {
	GroupStore      // consumer groups (groups.go)
	RetentionStore  // retention, deletion, leases, merging (retention.go)
	CompactionStore // keyed compaction (compaction.go)
	auth.Store      // tokens, SCRAM credentials, ACLs
	// ACLChanges (auth.ACLWatcher) announces ACL changes, so that the
	// agents' ACL caches reload.
	auth.ACLWatcher
	AgentStore    // live agents (agents.go)
	ProducerStore // idempotent producer states (producers.go)

	CreateTopic(ctx context.Context, spec TopicSpec) (Topic, error)
	// DeleteTopic removes the topic; its batches become unreadable.
	DeleteTopic(ctx context.Context, name string) error
	// ListTopics returns all topics ordered by name.
	ListTopics(ctx context.Context) ([]Topic, error)
	DescribeTopic(ctx context.Context, name string) (TopicDescription, error)
	// TopicByID finds a live topic by ID (ErrTopicNotFound if deleted).
	TopicByID(ctx context.Context, id int64) (Topic, error)

	// CommitFile records a file and assigns offsets to all its batches in
	// one transaction (one round trip on PostgreSQL), locking partitions in
	// (topic id, partition) order. Batches of one partition inside a file
	// get consecutive offsets in the order given. Per-batch refusals are
	// in BatchResult.Err.
	//
	// CommitFile is idempotent by f.Key: committing a key that is already
	// committed writes nothing and returns the results stored by the first
	// commit (same offsets, refusals and LogAppendTime), so a caller whose
	// answer was lost retries with the same FileCommit and learns the real
	// outcome. An error for which NotApplied is true means nothing was
	// committed; any other error means the outcome is unknown.
	CommitFile(ctx context.Context, f FileCommit) ([]BatchResult, error)

	// CommitFiles commits several files in one transaction (one round
	// trip on PostgreSQL): all of them or none. Files are sequenced in
	// the order given: a partition's batches of files[i] get offsets below
	// those of files[i+1]. The partitions of every file of the call are
	// locked first, all together, in (topic id, partition) order, so that
	// concurrent calls never deadlock. The answer holds each file's
	// results, in the order given. At most MaxCommitFiles files, each
	// valid for CommitFile, with distinct keys (else ErrInvalidCommit and
	// nothing written); no file: no results and no call to the store.
	//
	// CommitFiles is idempotent by every file key, like CommitFile: a file
	// already committed (by this call's retry, or by any earlier call)
	// writes nothing and answers with its stored results, so a retry of
	// the same set after a lost answer learns every file's real outcome.
	// A file committed earlier with another number of batches is a
	// caller's mistake: each of its results carries ErrInvalidCommit and
	// nothing of it is written; the other files commit regardless. Errors
	// are CommitFile's: NotApplied means no file of the call was
	// committed, any other error leaves the outcome unknown.
	CommitFiles(ctx context.Context, files []FileCommit) ([][]BatchResult, error)

	// FindBatches returns the committed batches of a partition starting
	// with the one containing offset, in offset order, stopping once their
	// ByteLength sum reaches maxBytes (at least one batch is returned when
	// offset < high watermark). offset == high watermark returns no batches.
	// offset outside [log start, high watermark] is *OffsetOutOfRangeError.
	FindBatches(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int64) ([]BatchRef, PartitionState, error)

	// ListOffset resolves spec (ts is used for OffsetTimestamp, unix ms).
	ListOffset(ctx context.Context, topicID int64, partition int32, spec OffsetSpec, ts int64) (int64, error)

	// PartitionStates returns the states of the topic's partitions.
	PartitionStates(ctx context.Context, topicID int64) ([]PartitionState, error)

	// InitProducer allocates a new producer id with epoch 0.
	InitProducer(ctx context.Context) (id int64, epoch int16, err error)

	// Notices returns a channel of commit notices (from any process sharing
	// the store) until ctx ends; the channel is closed then. The channel is
	// buffered; when the receiver lags, notices are merged into one with All set.
	Notices(ctx context.Context) (<-chan Notice, error)

	// Ping checks that the store answers (readiness).
	Ping(ctx context.Context) error

	Close() error
}
