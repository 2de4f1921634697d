// Package metadatatest is the conformance suite every metadata.Store
// implementation passes. A backend's tests call Run with a function that
// opens a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		metadatatest.Run(t, func(t *testing.T) metadata.Store { ... })
//	}
//
// Each subtest closes its store and then checks that no goroutine the store
// started is left running (goroutines that existed before the store was
// opened are ignored).
package metadatatest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/metadata"
)

// testTimeout bounds each subtest's calls to the store.
const testTimeout = 60 * time.Second

// Run runs every conformance test against stores made by open. open must
// return a new store with no topics; Run closes it.
func Run(t *testing.T, open func(t *testing.T) metadata.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s metadata.Store)
	}{
		{"TopicLifecycle", testTopicLifecycle},
		{"Agents", testAgents},
		{"AgentsRule", testAgentsRule}, // agents_rule.go
		{"Producers", testProducers},
		{"TopicValidation", testTopicValidation},
		{"TopicConcurrentCreate", testTopicConcurrentCreate},
		{"CommitDenseOffsets", testCommitDenseOffsets},
		{"CommitInvalid", testCommitInvalid},
		{"CommitUnknownPartitions", testCommitUnknownPartitions},
		{"CommitReplay", testCommitReplay},
		{"CommitReplayConcurrent", testCommitReplayConcurrent},
		{"UnknownProducer", testUnknownProducer},
		{"FaultAnswerLost", testFaultAnswerLost},
		{"FaultRefusedAndHung", testFaultRefusedAndHung},
		{"FindBatchesBudget", testFindBatchesBudget},
		{"FindBatchesRange", testFindBatchesRange},
		{"FindBatchesManyBatches", testFindBatchesMany},
		{"ListOffset", testListOffset},
		{"DeletedTopicUnreadable", testDeletedTopicUnreadable},
		{"IdempotentRetry", testIdempotentRetry},
		{"IdempotentOrderAndEpochs", testIdempotentOrderAndEpochs},
		{"IdempotentWithinOneFile", testIdempotentWithinOneFile},
		{"IdempotentMixedFile", testIdempotentMixedFile},
		{"IdempotentDedupeWindow", testIdempotentDedupeWindow},
		{"IdempotentWraparound", testIdempotentWraparound},
		{"InitProducer", testInitProducer},
		{"ReinitProducer", testReinitProducer},                   // producer_epochs.go
		{"ReinitProducerSequences", testReinitProducerSequences}, // producer_epochs.go
		{"ExpireProducerEpochs", testExpireProducerEpochs},       // producer_epochs.go
		{"Notices", testNotices},
		{"NoticesOverflow", testNoticesOverflow},
		{"ConcurrentCommits", testConcurrentCommits},
		{"ConcurrentSamePartitions", testConcurrentSamePartitions},
		{"CancelledCommit", testCancelledCommit},
		{"Closed", testClosed},
	}
	tests = append(tests, commitFilesTests...) // commit_files.go
	tests = append(tests, groupTests...)       // groups.go
	tests = append(tests, retentionTests...)
	tests = append(tests, compactionTests...) // compaction.go
	tests = append(tests, icebergTests...)    // iceberg.go
	tests = append(tests, authTests...)       // auth.go
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			s := open(t)
			closed := false
			defer func() {
				if !closed {
					s.Close()
				}
			}()
			tc.fn(t, s)
			closed = true
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			goleak.VerifyNone(t, before)
		})
	}
}

// ctx returns a context bounded by testTimeout and cancelled at the end of t.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return c
}

// createTopic creates a topic or fails the test.
func createTopic(t *testing.T, s metadata.Store, name string, partitions int32) metadata.Topic {
	t.Helper()
	tp, err := s.CreateTopic(ctx(t), metadata.TopicSpec{Name: name, Partitions: partitions})
	if err != nil {
		t.Fatalf("CreateTopic(%s, %d): %v", name, partitions, err)
	}
	return tp
}

// plain is a non-idempotent batch of count records of 100 bytes each.
func plain(topic int64, partition, count int32) metadata.BatchCommit {
	return metadata.BatchCommit{
		TopicID: topic, Partition: partition, RecordCount: count, ByteLength: 100 * int64(count),
		MaxTimestamp: 1_700_000_000_000, ProducerID: -1, BaseSequence: metadata.NoSequence,
	}
}

// idem is an idempotent batch.
func idem(topic int64, partition int32, pid int64, epoch int16, seq, count int32) metadata.BatchCommit {
	b := plain(topic, partition, count)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	return b
}

// producers issues n producer ids with InitProducer and returns the first;
// the ids are consecutive (the store is fresh and used by one goroutine).
func producers(t *testing.T, s metadata.Store, n int) int64 {
	t.Helper()
	var first int64
	for i := range n {
		id, epoch, err := s.InitProducer(ctx(t))
		if err != nil || epoch != 0 {
			t.Fatalf("InitProducer: %d, %d, %v", id, epoch, err)
		}
		if i == 0 {
			first = id
		} else if id != first+int64(i) {
			t.Fatalf("InitProducer: id %d after %d ids from %d: not consecutive", id, i, first)
		}
	}
	return first
}

// file lays batches out back to back in a file named key.
func file(key string, batches ...metadata.BatchCommit) metadata.FileCommit {
	f := metadata.FileCommit{Key: key, Batches: make([]metadata.BatchCommit, len(batches))}
	var off int64 = 16 // a header
	for i, b := range batches {
		b.ByteOffset = off
		off += b.ByteLength
		f.Batches[i] = b
	}
	f.Size = off + 32 // a footer
	return f
}

var fileSeq atomic.Int64

// key returns a new file key.
func key() string {
	n := fileSeq.Add(1)
	return fmt.Sprintf("test/v1/files/%02x/%08d", n%256, n)
}

// commit commits f or fails the test, checking the result count.
func commit(t *testing.T, s metadata.Store, f metadata.FileCommit) []metadata.BatchResult {
	t.Helper()
	res, err := s.CommitFile(ctx(t), f)
	if err != nil {
		t.Fatalf("CommitFile(%s): %v", f.Key, err)
	}
	if len(res) != len(f.Batches) {
		t.Fatalf("CommitFile(%s): %d results for %d batches", f.Key, len(res), len(f.Batches))
	}
	return res
}

// commitOne commits one batch in its own file and returns its result.
func commitOne(t *testing.T, s metadata.Store, b metadata.BatchCommit) metadata.BatchResult {
	t.Helper()
	return commit(t, s, file(key(), b))[0]
}

// wantAccepted fails unless r is a new, accepted batch at offset want.
func wantAccepted(t *testing.T, what string, r metadata.BatchResult, want int64) {
	t.Helper()
	if r.Err != nil || r.Duplicate || r.BaseOffset != want {
		t.Errorf("%s: got %+v, want accepted at offset %d", what, r, want)
	}
}

// wantRefused fails unless r was refused with err.
func wantRefused(t *testing.T, what string, r metadata.BatchResult, err error) {
	t.Helper()
	if !errors.Is(r.Err, err) || r.Duplicate {
		t.Errorf("%s: got %+v, want refused with %v", what, r, err)
	}
}

// wantDuplicate fails unless r is a duplicate of the batch at offset want.
func wantDuplicate(t *testing.T, what string, r metadata.BatchResult, want int64) {
	t.Helper()
	if r.Err != nil || !r.Duplicate || r.BaseOffset != want {
		t.Errorf("%s: got %+v, want duplicate of offset %d", what, r, want)
	}
}

// hw returns a partition's high watermark or fails the test.
func hw(t *testing.T, s metadata.Store, topic int64, partition int32) int64 {
	t.Helper()
	off, err := s.ListOffset(ctx(t), topic, partition, metadata.OffsetLatest, 0)
	if err != nil {
		t.Fatalf("ListOffset(%d, %d, latest): %v", topic, partition, err)
	}
	return off
}

// allBatches reads a partition's whole log and checks that its offsets are
// dense from the log start to the high watermark.
func allBatches(t *testing.T, s metadata.Store, topic int64, partition int32) []metadata.BatchRef {
	t.Helper()
	refs, st, err := s.FindBatches(ctx(t), topic, partition, 0, 1<<62)
	if err != nil {
		t.Fatalf("FindBatches(%d, %d, 0): %v", topic, partition, err)
	}
	next := st.LogStartOffset
	for i, r := range refs {
		if r.TopicID != topic || r.Partition != partition {
			t.Fatalf("partition %d/%d batch %d is of %d/%d", topic, partition, i, r.TopicID, r.Partition)
		}
		if r.BaseOffset != next || r.LastOffset != r.BaseOffset+int64(r.RecordCount)-1 {
			t.Fatalf("partition %d/%d batch %d: offsets [%d, %d] with %d records, want base %d (gap or overlap)",
				topic, partition, i, r.BaseOffset, r.LastOffset, r.RecordCount, next)
		}
		next = r.LastOffset + 1
	}
	if next != st.HighWatermark {
		t.Fatalf("partition %d/%d: batches end at %d, high watermark %d", topic, partition, next, st.HighWatermark)
	}
	return refs
}
