package metadatatest

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

// sameResults fails unless got equals want batch by batch (refusals by
// errors.Is).
func sameResults(t *testing.T, what string, got, want []metadata.BatchResult) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.BaseOffset != w.BaseOffset || g.LogAppendTime != w.LogAppendTime || g.Duplicate != w.Duplicate ||
			!errors.Is(g.Err, w.Err) || (g.Err == nil) != (w.Err == nil) {
			t.Errorf("%s: batch %d: %+v, want %+v (the first commit's)", what, i, g, w)
		}
	}
}

// logState is every partition's high watermark and batch count.
func logState(t *testing.T, s metadata.Store, topic int64, partitions int32) [][2]int64 {
	t.Helper()
	st := make([][2]int64, partitions)
	for p := range partitions {
		st[p] = [2]int64{hw(t, s, topic, p), int64(len(allBatches(t, s, topic, p)))}
	}
	return st
}

// testCommitReplay commits a file holding every kind of batch (accepted,
// refused for each reason, idempotent duplicates of an earlier file and of
// the same file), then commits the same FileCommit again: the second commit
// writes nothing and answers exactly as the first did. A commit of the same
// key with other batches writes nothing either and gets the first results.
func testCommitReplay(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "replay", 3)
	gone := createTopic(t, s, "replay-gone", 1)
	if err := s.DeleteTopic(ctx(t), gone.Name); err != nil {
		t.Fatal(err)
	}
	pid := producers(t, s, 2)
	wantAccepted(t, "earlier file", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 2)), 0)
	f := file(key(),
		plain(tp.ID, 1, 3),             // accepted at 0
		idem(tp.ID, 0, pid, 0, 0, 2),   // duplicate of the earlier file's batch: 0
		idem(tp.ID, 0, pid, 0, 2, 4),   // accepted at 2
		idem(tp.ID, 0, pid, 0, 2, 4),   // duplicate of the batch before it: 2
		idem(tp.ID, 0, pid, 0, 9, 1),   // out of order
		idem(tp.ID, 2, pid+1, 0, 0, 1), // accepted at 0
		idem(tp.ID, 2, pid+1, 0, 5, 1), // out of order
		idem(tp.ID, 2, 1<<40, 0, 0, 1), // producer never issued
		plain(tp.ID, 7, 1),             // no such partition
		plain(gone.ID, 0, 1),           // deleted topic
		plain(tp.ID, 1, 2),             // accepted at 3
	)
	first := commit(t, s, f)
	wantAccepted(t, "plain", first[0], 0)
	wantDuplicate(t, "earlier file's batch", first[1], 0)
	wantAccepted(t, "next", first[2], 2)
	wantDuplicate(t, "same file's batch", first[3], 2)
	wantRefused(t, "out of order", first[4], metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "second producer", first[5], 0)
	wantRefused(t, "second producer out of order", first[6], metadata.ErrOutOfOrderSequence)
	wantRefused(t, "unknown producer", first[7], metadata.ErrUnknownProducer)
	wantRefused(t, "no partition", first[8], metadata.ErrPartitionNotFound)
	wantRefused(t, "deleted topic", first[9], metadata.ErrTopicNotFound)
	wantAccepted(t, "plain again", first[10], 3)
	before := logState(t, s, tp.ID, 3)

	for i := range 2 {
		sameResults(t, "re-commit", commit(t, s, f), first)
		if after := logState(t, s, tp.ID, 3); !reflect.DeepEqual(after, before) {
			t.Fatalf("re-commit %d changed the log: (high watermark, batches) per partition %v, was %v", i, after, before)
		}
	}
	// Other batches under the same key: still the first commit's answer.
	other := file(f.Key, plain(tp.ID, 0, 5), plain(tp.ID, 1, 5), plain(tp.ID, 2, 5), plain(tp.ID, 0, 1), plain(tp.ID, 0, 1),
		plain(tp.ID, 0, 1), plain(tp.ID, 0, 1), plain(tp.ID, 0, 1), plain(tp.ID, 0, 1), plain(tp.ID, 0, 1), plain(tp.ID, 0, 1))
	sameResults(t, "same key, other batches", commit(t, s, other), first)
	if after := logState(t, s, tp.ID, 3); !reflect.DeepEqual(after, before) {
		t.Fatalf("a commit of the same key changed the log: %v, was %v", after, before)
	}
	// Another number of batches under the same key: a caller's mistake,
	// refused; the key stays the first file's.
	if _, err := s.CommitFile(ctx(t), file(f.Key, plain(tp.ID, 0, 1))); !errors.Is(err, metadata.ErrInvalidCommit) {
		t.Errorf("same key, one batch instead of %d: %v, want ErrInvalidCommit", len(f.Batches), err)
	}
	if after := logState(t, s, tp.ID, 3); !reflect.DeepEqual(after, before) {
		t.Fatalf("a commit of the same key changed the log: %v, was %v", after, before)
	}
	// The idempotent producers' state is the first commit's too.
	wantAccepted(t, "producer's next batch", commitOne(t, s, idem(tp.ID, 0, pid, 0, 6, 1)), 6)
	wantAccepted(t, "second producer's next batch", commitOne(t, s, idem(tp.ID, 2, pid+1, 0, 1, 1)), 1)
}

// testCommitReplayConcurrent commits one FileCommit from several goroutines
// at once: exactly one commit writes, and every caller gets its results.
func testCommitReplayConcurrent(t *testing.T, s metadata.Store) {
	const callers = 6
	tp := createTopic(t, s, "replay-race", 2)
	pid := producers(t, s, 1)
	for round := range int32(5) {
		f := file(key(), plain(tp.ID, 0, 2), idem(tp.ID, 1, pid, 0, 3*round, 3), plain(tp.ID, 0, 1))
		results := make([][]metadata.BatchResult, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = s.CommitFile(ctx(t), f)
			}()
		}
		wg.Wait()
		for i := range callers {
			if errs[i] != nil {
				t.Fatalf("round %d caller %d: %v", round, i, errs[i])
			}
			sameResults(t, "concurrent commit of one file", results[i], results[0])
		}
		wantAccepted(t, "plain", results[0][0], int64(3*round))
		wantAccepted(t, "idempotent", results[0][1], int64(3*round))
		wantAccepted(t, "plain after", results[0][2], int64(3*round+2))
		if h0, h1 := hw(t, s, tp.ID, 0), hw(t, s, tp.ID, 1); h0 != int64(3*(round+1)) || h1 != int64(3*(round+1)) {
			t.Fatalf("round %d: high watermarks %d, %d, want %d each: the file was committed more than once", round, h0, h1, 3*(round+1))
		}
	}
	allBatches(t, s, tp.ID, 0)
	allBatches(t, s, tp.ID, 1)
}

// testUnknownProducer: idempotent batches of a producer id never issued by
// InitProducer are refused, batch by batch; plain batches with such an id
// but no sequence are not idempotent and pass.
func testUnknownProducer(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "unknown-producer", 2)
	pid := producers(t, s, 1)
	res := commit(t, s, file(key(),
		idem(tp.ID, 0, pid+1, 0, 0, 1), // the next id: not issued yet
		idem(tp.ID, 0, pid, 0, 0, 2),
		idem(tp.ID, 1, 1<<50, 0, 0, 1),
		idem(tp.ID, 1, 1<<50, 0, metadata.NoSequence, 4),
	))
	wantRefused(t, "next id, not issued", res[0], metadata.ErrUnknownProducer)
	wantAccepted(t, "issued id", res[1], 0)
	wantRefused(t, "far id", res[2], metadata.ErrUnknownProducer)
	wantAccepted(t, "no sequence: not idempotent", res[3], 0)
	// Once issued, the id works, from sequence 0 (the refusal left no state).
	next := producers(t, s, 1)
	if next != pid+1 {
		t.Fatalf("InitProducer after %d = %d", pid, next)
	}
	wantAccepted(t, "now issued", commitOne(t, s, idem(tp.ID, 0, next, 0, 0, 1)), 2)
	if h0, h1 := hw(t, s, tp.ID, 0), hw(t, s, tp.ID, 1); h0 != 3 || h1 != 4 {
		t.Errorf("high watermarks %d, %d, want 3, 4", h0, h1)
	}
}
