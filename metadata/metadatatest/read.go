package metadatatest

import (
	"errors"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

// offsets lists the base offsets of refs.
func offsets(refs []metadata.BatchRef) []int64 {
	out := make([]int64, len(refs))
	for i, r := range refs {
		out[i] = r.BaseOffset
	}
	return out
}

func equalOffsets(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testFindBatchesBudget(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "budget", 1)
	// Ten batches of 2 records, 200 bytes each: offsets 0, 2, ..., 18.
	var batches []metadata.BatchCommit
	for range 10 {
		batches = append(batches, plain(tp.ID, 0, 2))
	}
	commit(t, s, file(key(), batches...))
	c := ctx(t)
	cases := []struct {
		offset, maxBytes int64
		want             []int64
	}{
		{0, 1 << 40, []int64{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}},
		{0, 0, []int64{0}},                 // the first batch always comes
		{0, 1, []int64{0}},                 // even past the budget
		{0, 200, []int64{0}},               // budget reached exactly
		{0, 201, []int64{0, 2}},            // not reached by one batch
		{0, 500, []int64{0, 2, 4}},         // stops once reached
		{5, 400, []int64{4, 6}},            // offset inside a batch
		{19, 1 << 20, []int64{18}},         // the last record
		{18, 1 << 20, []int64{18}},         // the last batch's base
		{3, 1000, []int64{2, 4, 6, 8, 10}}, // middle
	}
	for _, tc := range cases {
		refs, st, err := s.FindBatches(c, tp.ID, 0, tc.offset, tc.maxBytes)
		if err != nil {
			t.Errorf("FindBatches(%d, %d): %v", tc.offset, tc.maxBytes, err)
			continue
		}
		if got := offsets(refs); !equalOffsets(got, tc.want) {
			t.Errorf("FindBatches(%d, %d) = %v, want %v", tc.offset, tc.maxBytes, got, tc.want)
		}
		if st != (metadata.PartitionState{Partition: 0, LogStartOffset: 0, HighWatermark: 20}) {
			t.Errorf("FindBatches(%d, %d) state %+v", tc.offset, tc.maxBytes, st)
		}
	}
}

func testFindBatchesRange(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "range", 2)
	commit(t, s, file(key(), plain(tp.ID, 0, 3), plain(tp.ID, 0, 4)))
	c := ctx(t)

	refs, st, err := s.FindBatches(c, tp.ID, 0, 7, 1<<20)
	if err != nil || len(refs) != 0 || st.HighWatermark != 7 {
		t.Errorf("FindBatches(offset == high watermark) = %v, %+v, %v; want no batches, high watermark 7", offsets(refs), st, err)
	}
	refs, st, err = s.FindBatches(c, tp.ID, 1, 0, 1<<20)
	if err != nil || len(refs) != 0 || st != (metadata.PartitionState{Partition: 1}) {
		t.Errorf("FindBatches(empty partition) = %v, %+v, %v", offsets(refs), st, err)
	}
	for _, off := range []int64{8, 1000, -1} {
		_, _, err := s.FindBatches(c, tp.ID, 0, off, 1<<20)
		var oor *metadata.OffsetOutOfRangeError
		if !errors.As(err, &oor) {
			t.Errorf("FindBatches(%d) = %v, want *OffsetOutOfRangeError", off, err)
			continue
		}
		if *oor != (metadata.OffsetOutOfRangeError{Offset: off, LogStartOffset: 0, HighWatermark: 7}) {
			t.Errorf("FindBatches(%d) error %+v", off, *oor)
		}
	}
	if _, _, err := s.FindBatches(c, tp.ID, 2, 0, 1<<20); !errors.Is(err, metadata.ErrPartitionNotFound) {
		t.Errorf("FindBatches(partition past count) = %v, want ErrPartitionNotFound", err)
	}
	if _, _, err := s.FindBatches(c, 1<<40, 0, 0, 1<<20); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("FindBatches(unknown topic) = %v, want ErrTopicNotFound", err)
	}
}

// testFindBatchesMany reads a log longer than any internal page size.
func testFindBatchesMany(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "many", 1)
	const n = 2500
	for range 2 {
		batches := make([]metadata.BatchCommit, n/2)
		for i := range batches {
			batches[i] = plain(tp.ID, 0, 1)
		}
		commit(t, s, file(key(), batches...))
	}
	refs := allBatches(t, s, tp.ID, 0)
	if len(refs) != n {
		t.Fatalf("read %d batches, want %d", len(refs), n)
	}
	c := ctx(t)
	got, _, err := s.FindBatches(c, tp.ID, 0, 100, 1500*100)
	if err != nil || len(got) != 1500 || got[0].BaseOffset != 100 || got[1499].BaseOffset != 1599 {
		t.Errorf("FindBatches(100, 1500 batches' bytes) = %d batches, %v", len(got), err)
	}
}

func testListOffset(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "times", 2)
	// Max timestamps are not monotonic, as producers' clocks are not.
	var batches []metadata.BatchCommit
	for _, ts := range []int64{100, 400, 200, 400} {
		b := plain(tp.ID, 0, 5)
		b.MaxTimestamp = ts
		batches = append(batches, b)
	}
	commit(t, s, file(key(), batches...)) // offsets 0, 5, 10, 15; HW 20
	c := ctx(t)
	for _, tc := range []struct {
		spec metadata.OffsetSpec
		ts   int64
		want int64
	}{
		{metadata.OffsetEarliest, 0, 0},
		{metadata.OffsetLatest, 0, 20},
		{metadata.OffsetTimestamp, 0, 0},
		{metadata.OffsetTimestamp, 100, 0},
		{metadata.OffsetTimestamp, 101, 5},
		{metadata.OffsetTimestamp, 250, 5},
		{metadata.OffsetTimestamp, 400, 5},
		{metadata.OffsetTimestamp, 401, 20}, // beyond all: the high watermark
		{metadata.OffsetMaxTimestamp, 0, 5}, // the first batch of the largest max timestamp
	} {
		got, err := s.ListOffset(c, tp.ID, 0, tc.spec, tc.ts)
		if err != nil || got != tc.want {
			t.Errorf("ListOffset(spec %d, ts %d) = %d, %v; want %d", tc.spec, tc.ts, got, err, tc.want)
		}
	}
	for _, spec := range []metadata.OffsetSpec{metadata.OffsetEarliest, metadata.OffsetLatest, metadata.OffsetTimestamp, metadata.OffsetMaxTimestamp} {
		if got, err := s.ListOffset(c, tp.ID, 1, spec, 0); err != nil || got != 0 {
			t.Errorf("ListOffset(empty partition, spec %d) = %d, %v; want 0", spec, got, err)
		}
	}
	if _, err := s.ListOffset(c, tp.ID, 5, metadata.OffsetLatest, 0); !errors.Is(err, metadata.ErrPartitionNotFound) {
		t.Errorf("ListOffset(unknown partition) = %v, want ErrPartitionNotFound", err)
	}
	if _, err := s.ListOffset(c, 1<<40, 0, metadata.OffsetLatest, 0); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("ListOffset(unknown topic) = %v, want ErrTopicNotFound", err)
	}
}

func testDeletedTopicUnreadable(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "doomed", 2)
	pid := producers(t, s, 1)
	commit(t, s, file(key(), plain(tp.ID, 0, 3), idem(tp.ID, 1, pid, 0, 0, 2)))
	c := ctx(t)
	if err := s.DeleteTopic(c, "doomed"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if _, _, err := s.FindBatches(c, tp.ID, 0, 0, 1<<20); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("FindBatches(deleted) = %v, want ErrTopicNotFound", err)
	}
	if _, err := s.ListOffset(c, tp.ID, 0, metadata.OffsetLatest, 0); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("ListOffset(deleted) = %v, want ErrTopicNotFound", err)
	}
	if _, err := s.PartitionStates(c, tp.ID); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("PartitionStates(deleted) = %v, want ErrTopicNotFound", err)
	}
	// The re-created topic starts empty, producer state included.
	tp2 := createTopic(t, s, "doomed", 2)
	if got := hw(t, s, tp2.ID, 0); got != 0 {
		t.Errorf("re-created topic high watermark %d, want 0", got)
	}
	r := commitOne(t, s, idem(tp2.ID, 1, pid, 0, 0, 2))
	wantAccepted(t, "same producer batch on the re-created topic", r, 0)
}
