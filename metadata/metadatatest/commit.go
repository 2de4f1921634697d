package metadatatest

import (
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

func testCommitDenseOffsets(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "dense", 10)
	other := createTopic(t, s, "other", 2)
	want := map[int32]int64{} // next offset per partition of tp
	type placed struct {
		key string
		b   metadata.BatchCommit
		r   metadata.BatchResult
	}
	var all []placed
	for round := range 5 {
		var batches []metadata.BatchCommit
		// Every partition once, partition 3 three more times, in a shuffled order.
		for _, p := range []int32{7, 3, 0, 9, 3, 1, 2, 8, 3, 4, 5, 6, 3} {
			b := plain(tp.ID, p, int32(1+(round+int(p))%4))
			b.MaxTimestamp = int64(1000*round) + int64(p)
			batches = append(batches, b)
		}
		batches = append(batches, plain(other.ID, 1, 2))
		f := file(key(), batches...)
		start := time.Now()
		res := commit(t, s, f)
		end := time.Now()
		for i, b := range f.Batches {
			r := res[i]
			if b.TopicID == other.ID {
				wantAccepted(t, "other topic", r, int64(2*round))
				continue
			}
			wantAccepted(t, "batch", r, want[b.Partition])
			want[b.Partition] += int64(b.RecordCount)
			if r.LogAppendTime < start.Add(-5*time.Second).UnixMilli() || r.LogAppendTime > end.Add(5*time.Second).UnixMilli() {
				t.Errorf("LogAppendTime %d is not about now (%d)", r.LogAppendTime, start.UnixMilli())
			}
			if r.LogAppendTime != res[0].LogAppendTime {
				t.Errorf("batches of one file got append times %d and %d", res[0].LogAppendTime, r.LogAppendTime)
			}
			all = append(all, placed{f.Key, b, r})
		}
	}
	states, err := s.PartitionStates(ctx(t), tp.ID)
	if err != nil {
		t.Fatalf("PartitionStates: %v", err)
	}
	for _, st := range states {
		if st.HighWatermark != want[st.Partition] || st.LogStartOffset != 0 {
			t.Errorf("partition %d state %+v, want high watermark %d", st.Partition, st, want[st.Partition])
		}
	}
	// Every batch reads back exactly as committed.
	byOffset := map[int32]map[int64]metadata.BatchRef{}
	for p := range int32(10) {
		byOffset[p] = map[int64]metadata.BatchRef{}
		for _, r := range allBatches(t, s, tp.ID, p) {
			byOffset[p][r.BaseOffset] = r
		}
	}
	for _, pl := range all {
		got, ok := byOffset[pl.b.Partition][pl.r.BaseOffset]
		wantRef := metadata.BatchRef{
			TopicID: tp.ID, Partition: pl.b.Partition, BaseOffset: pl.r.BaseOffset,
			LastOffset: pl.r.BaseOffset + int64(pl.b.RecordCount) - 1, FileKey: pl.key, FileSize: got.FileSize,
			ByteOffset: pl.b.ByteOffset, ByteLength: pl.b.ByteLength, RecordCount: pl.b.RecordCount,
			MaxTimestamp: pl.b.MaxTimestamp, LogAppendTime: pl.r.LogAppendTime,
		}
		if !ok || got != wantRef || got.FileSize <= got.ByteOffset {
			t.Errorf("batch at %d/%d reads back as %+v\nwant %+v", pl.b.Partition, pl.r.BaseOffset, got, wantRef)
		}
	}
	if got := hw(t, s, other.ID, 1); got != 10 {
		t.Errorf("other topic high watermark %d, want 10", got)
	}
}

func testCommitInvalid(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "inv", 2)
	good := plain(tp.ID, 0, 1)
	cases := map[string]metadata.FileCommit{
		"no key":       {Key: "", Size: 1000, Batches: []metadata.BatchCommit{good}},
		"no batches":   {Key: key(), Size: 1000},
		"zero size":    {Key: key(), Size: 0, Batches: []metadata.BatchCommit{good}},
		"zero records": file(key(), plain(tp.ID, 0, 0)),
		"no bytes": func() metadata.FileCommit {
			f := file(key(), good)
			f.Batches[0].ByteLength = 0
			return f
		}(),
		"past the end": func() metadata.FileCommit {
			f := file(key(), good)
			f.Batches[0].ByteOffset = f.Size - 10
			return f
		}(),
		"negative offset": func() metadata.FileCommit {
			f := file(key(), good)
			f.Batches[0].ByteOffset = -1
			return f
		}(),
		"bad sequence": file(key(), idem(tp.ID, 0, 1, 0, -5, 1)),
	}
	c := ctx(t)
	for name, f := range cases {
		if _, err := s.CommitFile(c, f); !errors.Is(err, metadata.ErrInvalidCommit) {
			t.Errorf("%s: CommitFile = %v, want ErrInvalidCommit", name, err)
		}
	}
	if got := hw(t, s, tp.ID, 0); got != 0 {
		t.Fatalf("refused commits moved the high watermark to %d", got)
	}

}

func testCommitUnknownPartitions(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "known", 2)
	gone := createTopic(t, s, "gone", 1)
	if err := s.DeleteTopic(ctx(t), "gone"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	res := commit(t, s, file(key(),
		plain(tp.ID, 1, 2),
		plain(1<<40, 0, 1),   // never existed
		plain(tp.ID, 2, 1),   // past the partition count
		plain(gone.ID, 0, 1), // deleted
		plain(tp.ID, 1, 3),
	))
	wantAccepted(t, "known partition", res[0], 0)
	wantRefused(t, "unknown topic", res[1], metadata.ErrTopicNotFound)
	wantRefused(t, "unknown partition", res[2], metadata.ErrPartitionNotFound)
	wantRefused(t, "deleted topic", res[3], metadata.ErrTopicNotFound)
	wantAccepted(t, "known partition again", res[4], 2)
	for i := 1; i <= 3; i++ {
		if res[i].BaseOffset >= 0 {
			t.Errorf("refused batch %d has base offset %d, want -1", i, res[i].BaseOffset)
		}
	}
	if got := hw(t, s, tp.ID, 1); got != 5 {
		t.Errorf("high watermark %d, want 5", got)
	}
	// A file whose every batch is refused commits nothing, without error.
	res = commit(t, s, file(key(), plain(gone.ID, 0, 1)))
	wantRefused(t, "only a deleted topic", res[0], metadata.ErrTopicNotFound)
}
