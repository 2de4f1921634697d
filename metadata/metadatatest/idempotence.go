package metadatatest

import (
	"math"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func testIdempotentRetry(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "retry", 2)
	pid := producers(t, s, 3)
	commitOne(t, s, plain(tp.ID, 0, 3)) // someone else's records first: offsets 0-2
	first := commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 5))
	wantAccepted(t, "first", first, 3)
	for i := range 3 {
		r := commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 5))
		wantDuplicate(t, "retry", r, 3)
		if i == 0 && r.LogAppendTime <= 0 {
			t.Errorf("duplicate has append time %d", r.LogAppendTime)
		}
	}
	if got := hw(t, s, tp.ID, 0); got != 8 {
		t.Errorf("high watermark %d after retries, want 8", got)
	}
	wantAccepted(t, "next", commitOne(t, s, idem(tp.ID, 0, pid, 0, 5, 2)), 8)
	wantDuplicate(t, "older retry", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 5)), 3)
	// Producers and partitions are independent.
	wantAccepted(t, "other partition", commitOne(t, s, idem(tp.ID, 1, pid, 0, 0, 5)), 0)
	wantAccepted(t, "other producer", commitOne(t, s, idem(tp.ID, 0, pid+1, 0, 0, 5)), 10)
	// Without a producer id or a sequence nothing is checked.
	for range 2 {
		b := idem(tp.ID, 1, -1, 0, 0, 5)
		commitOne(t, s, b)
		b = idem(tp.ID, 1, pid+2, 0, metadata.NoSequence, 5)
		commitOne(t, s, b)
	}
	if got := hw(t, s, tp.ID, 1); got != 25 {
		t.Errorf("partition 1 high watermark %d, want 25", got)
	}
	allBatches(t, s, tp.ID, 0)
	allBatches(t, s, tp.ID, 1)
}

func testIdempotentOrderAndEpochs(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "order", 1)
	pid := producers(t, s, 1)
	// With no state a producer must start at sequence 0.
	wantRefused(t, "first at 42", commitOne(t, s, idem(tp.ID, 0, pid, 0, 42, 3)), metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "first at 0", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 3)), 0)
	wantRefused(t, "gap", commitOne(t, s, idem(tp.ID, 0, pid, 0, 4, 1)), metadata.ErrOutOfOrderSequence)
	wantRefused(t, "overlap", commitOne(t, s, idem(tp.ID, 0, pid, 0, 2, 2)), metadata.ErrOutOfOrderSequence)
	wantRefused(t, "same base, other length", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 2)), metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "in order", commitOne(t, s, idem(tp.ID, 0, pid, 0, 3, 1)), 3)
	// A new epoch must start at sequence 0.
	wantRefused(t, "new epoch at 46", commitOne(t, s, idem(tp.ID, 0, pid, 1, 46, 1)), metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "new epoch at 0", commitOne(t, s, idem(tp.ID, 0, pid, 1, 0, 2)), 4)
	// The old epoch is fenced, whatever its sequence.
	wantRefused(t, "stale epoch", commitOne(t, s, idem(tp.ID, 0, pid, 0, 46, 1)), metadata.ErrProducerFenced)
	wantRefused(t, "stale epoch retry", commitOne(t, s, idem(tp.ID, 0, pid, 0, 3, 1)), metadata.ErrProducerFenced)
	// The new epoch's batches are deduplicated, the old epoch's are forgotten.
	wantDuplicate(t, "new epoch retry", commitOne(t, s, idem(tp.ID, 0, pid, 1, 0, 2)), 4)
	wantAccepted(t, "new epoch next", commitOne(t, s, idem(tp.ID, 0, pid, 1, 2, 1)), 6)
	wantAccepted(t, "epoch 5 at 0", commitOne(t, s, idem(tp.ID, 0, pid, 5, 0, 1)), 7)
	if got := hw(t, s, tp.ID, 0); got != 8 {
		t.Errorf("high watermark %d, want 8 (refused batches take no offsets)", got)
	}
	allBatches(t, s, tp.ID, 0)
}

func testIdempotentWithinOneFile(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "onefile", 2)
	pid := producers(t, s, 1)
	res := commit(t, s, file(key(),
		idem(tp.ID, 0, pid, 0, 0, 2),
		idem(tp.ID, 1, pid, 0, 0, 1),
		idem(tp.ID, 0, pid, 0, 2, 3),
		idem(tp.ID, 0, pid, 0, 0, 2), // a retry of the first, in the same file
		idem(tp.ID, 0, pid, 0, 9, 1), // out of order after the third
		idem(tp.ID, 0, pid, 0, 5, 1),
		idem(tp.ID, 1, pid, 0, 1, 1),
	))
	wantAccepted(t, "p0 seq 0", res[0], 0)
	wantAccepted(t, "p1 seq 0", res[1], 0)
	wantAccepted(t, "p0 seq 2", res[2], 2)
	wantDuplicate(t, "p0 seq 0 again", res[3], 0)
	wantRefused(t, "p0 seq 9", res[4], metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "p0 seq 5", res[5], 5)
	wantAccepted(t, "p1 seq 1", res[6], 1)
	// The state the file left behind holds all three of its batches.
	wantDuplicate(t, "later retry of p0 seq 2", commitOne(t, s, idem(tp.ID, 0, pid, 0, 2, 3)), 2)
	wantAccepted(t, "p0 seq 6", commitOne(t, s, idem(tp.ID, 0, pid, 0, 6, 1)), 6)

	// An epoch bump inside a file, then the stale epoch in the same file.
	res = commit(t, s, file(key(),
		idem(tp.ID, 1, pid, 1, 0, 1),
		idem(tp.ID, 1, pid, 0, 2, 1),
		idem(tp.ID, 1, pid, 1, 1, 1),
	))
	wantAccepted(t, "epoch 1", res[0], 2)
	wantRefused(t, "epoch 0 after 1", res[1], metadata.ErrProducerFenced)
	wantAccepted(t, "epoch 1 next", res[2], 3)
	allBatches(t, s, tp.ID, 0)
	allBatches(t, s, tp.ID, 1)
}

// testIdempotentMixedFile mixes accepted, duplicate, refused and plain
// batches of several producers and partitions in one file.
func testIdempotentMixedFile(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "mixed", 3)
	p1 := producers(t, s, 3)
	p2, p3 := p1+1, p1+2
	wantAccepted(t, "a", commitOne(t, s, idem(tp.ID, 0, p1, 0, 0, 4)), 0)
	wantAccepted(t, "b", commitOne(t, s, idem(tp.ID, 1, p2, 3, 0, 4)), 0)
	res := commit(t, s, file(key(),
		plain(tp.ID, 0, 2),            // 4
		idem(tp.ID, 0, p1, 0, 0, 4),   // duplicate of 0
		idem(tp.ID, 0, p1, 0, 4, 1),   // 6
		idem(tp.ID, 1, p2, 2, 4, 1),   // fenced
		idem(tp.ID, 1, p2, 3, 5, 1),   // out of order
		idem(tp.ID, 1, p2, 3, 4, 2),   // 4
		idem(tp.ID, 2, p3, 0, 100, 1), // refused: a new producer starts at 0
		idem(tp.ID, 2, p3, 0, 0, 1),   // 0, new producer
		plain(tp.ID, 2, 1),            // 1
		idem(tp.ID, 9, p3, 0, 0, 1),   // no such partition
	))
	wantAccepted(t, "plain", res[0], 4)
	wantDuplicate(t, "duplicate", res[1], 0)
	wantAccepted(t, "next", res[2], 6)
	wantRefused(t, "fenced", res[3], metadata.ErrProducerFenced)
	wantRefused(t, "out of order", res[4], metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "in order", res[5], 4)
	wantRefused(t, "new producer not at 0", res[6], metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "new producer", res[7], 0)
	wantAccepted(t, "plain after", res[8], 1)
	wantRefused(t, "no partition", res[9], metadata.ErrPartitionNotFound)
	for p, want := range []int64{7, 6, 2} {
		if got := hw(t, s, tp.ID, int32(p)); got != want {
			t.Errorf("partition %d high watermark %d, want %d", p, got, want)
		}
		allBatches(t, s, tp.ID, int32(p))
	}
}

// testIdempotentDedupeWindow checks that the last five batches are
// remembered, and no more.
func testIdempotentDedupeWindow(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "window", 1)
	pid := producers(t, s, 1)
	for i := range int32(7) {
		wantAccepted(t, "batch", commitOne(t, s, idem(tp.ID, 0, pid, 0, 2*i, 2)), int64(2*i))
	}
	// Batches 2..6 are remembered; 0 and 1 are not.
	for i := int32(2); i < 7; i++ {
		wantDuplicate(t, "remembered retry", commitOne(t, s, idem(tp.ID, 0, pid, 0, 2*i, 2)), int64(2*i))
	}
	for i := int32(0); i < 2; i++ {
		wantRefused(t, "forgotten retry", commitOne(t, s, idem(tp.ID, 0, pid, 0, 2*i, 2)), metadata.ErrOutOfOrderSequence)
	}
	if got := hw(t, s, tp.ID, 0); got != 14 {
		t.Errorf("high watermark %d, want 14", got)
	}
}

func testIdempotentWraparound(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "wrap", 1)
	pid := producers(t, s, 2)
	// Producers start at 0: one huge batch brings the sequence near the top.
	const b = int64(math.MaxInt32 - 4)
	wantAccepted(t, "up to MaxInt32-5", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, math.MaxInt32-4)), 0)
	wantAccepted(t, "to MaxInt32", commitOne(t, s, idem(tp.ID, 0, pid, 0, math.MaxInt32-4, 5)), b)
	wantRefused(t, "past MaxInt32", commitOne(t, s, idem(tp.ID, 0, pid, 0, math.MaxInt32, 1)), metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "wrapped to 0", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 3)), b+5)
	// A batch that wraps inside itself: last sequence 1.
	wantAccepted(t, "up to MaxInt32-2", commitOne(t, s, idem(tp.ID, 0, pid+1, 0, 0, math.MaxInt32-1)), b+8)
	w := b + 8 + math.MaxInt32 - 1
	wantAccepted(t, "wrapping batch", commitOne(t, s, idem(tp.ID, 0, pid+1, 0, math.MaxInt32-1, 4)), w)
	wantDuplicate(t, "wrapping batch retry", commitOne(t, s, idem(tp.ID, 0, pid+1, 0, math.MaxInt32-1, 4)), w)
	wantAccepted(t, "after the wrapping batch", commitOne(t, s, idem(tp.ID, 0, pid+1, 0, 2, 1)), w+4)
}

// testProducers: a partition's producer states, by producer id, each with
// its last batch's sequence and offset; limit bounds them.
func testProducers(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "producers", 2)
	pid := producers(t, s, 2)
	commitOne(t, s, idem(tp.ID, 0, pid+1, 0, 0, 3)) // offsets 0-2
	commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 5))   // 3-7
	commitOne(t, s, idem(tp.ID, 0, pid, 0, 5, 2))   // 8-9
	commitOne(t, s, idem(tp.ID, 1, pid, 0, 0, 1))   // the other partition
	got, err := s.Producers(ctx(t), tp.ID, 0, 10)
	want := []metadata.ProducerInfo{{ProducerID: pid, Epoch: 0, LastSequence: 6, LastBaseOffset: 8}, {ProducerID: pid + 1, LastSequence: 2, LastBaseOffset: 0}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Producers = %+v, %v; want %+v", got, err, want)
	}
	if got, err := s.Producers(ctx(t), tp.ID, 0, 1); err != nil || len(got) != 1 || got[0].ProducerID != pid {
		t.Fatalf("Producers limit 1 = %+v, %v", got, err)
	}
	if got, err := s.Producers(ctx(t), tp.ID, 5, 10); err != nil || len(got) != 0 {
		t.Fatalf("Producers of an unknown partition = %+v, %v", got, err)
	}
}
