package metadatatest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// compactionTests are the CompactionStore conformance tests, each on a
// fresh store.
var compactionTests = []struct {
	name string
	fn   func(t *testing.T, s metadata.Store)
}{
	{"CompactionConfig", testCompactionConfig},
	{"CompactionSection", testCompactionSection},
	{"CompactionCommit", testCompactionCommit},
}

// testCompactionConfig: delete.retention.ms and min.compaction.lag.ms are
// validated like the other topic configs, with Kafka's defaults.
func testCompactionConfig(t *testing.T, s metadata.Store) {
	c := ctx(t)
	for _, bad := range []map[string]string{{"delete.retention.ms": "-1"}, {"delete.retention.ms": "soon"},
		{"min.compaction.lag.ms": "-1"}, {"min.compaction.lag.ms": "1.5"}} {
		if _, err := s.CreateTopic(c, metadata.TopicSpec{Name: "bad", Partitions: 1, Config: bad}); !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Errorf("CreateTopic(config %v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
	tp, err := s.CreateTopic(c, metadata.TopicSpec{Name: "kc", Partitions: 1, Config: map[string]string{"cleanup.policy": "compact"}})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := metadata.ParseCompaction(tp.Config)
	if err != nil || !cp.Enabled || cp.DeleteRetention != 24*time.Hour || cp.MinLag != 0 {
		t.Errorf("ParseCompaction(%v) = %+v, %v; want enabled, 1 day, 0", tp.Config, cp, err)
	}
	if _, err := s.AlterTopicConfig(c, "kc", map[string]string{"delete.retention.ms": "x"}, nil); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Errorf("AlterTopicConfig(delete.retention.ms=x) = %v, want ErrInvalidConfig", err)
	}
	got, err := s.AlterTopicConfig(c, "kc", map[string]string{"delete.retention.ms": "10", "min.compaction.lag.ms": "20"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := metadata.ParseCompaction(got.Config); err != nil || cp.DeleteRetention != 10*time.Millisecond || cp.MinLag != 20*time.Millisecond {
		t.Errorf("ParseCompaction(%v) = %+v, %v", got.Config, cp, err)
	}
	if cp, _ := metadata.ParseCompaction(map[string]string{"cleanup.policy": "delete"}); cp.Enabled {
		t.Error("cleanup.policy=delete enables compaction")
	}
}

// fourBatches commits four batches of 5 records to partition 0 of a new
// topic, each in its own file: offsets 0..4, 5..9, 10..14, 15..19.
func fourBatches(t *testing.T, s metadata.Store, name string) metadata.Topic {
	tp := createTopic(t, s, name, 1)
	for range 4 {
		commitOne(t, s, plain(tp.ID, 0, 5))
	}
	return tp
}

// bases returns the refs' base offsets.
func bases[T any](refs []T, base func(T) int64) []int64 {
	var out []int64
	for _, r := range refs {
		out = append(out, base(r))
	}
	return out
}

func refBase(r metadata.BatchRef) int64   { return r.BaseOffset }
func cBase(b metadata.CompactBatch) int64 { return b.BaseOffset }

// testCompactionSection: the section ends at the cleaning point: the last
// batch (the active tail) is never in it, nor batches younger than the
// lag, and the byte budget cuts it (keeping at least one batch).
func testCompactionSection(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := fourBatches(t, s, "cs")
	sec, err := s.CompactionSection(c, tp.ID, 0, 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if sec.CleaningPoint != 15 || sec.Cut || sec.State.HighWatermark != 20 || sec.Now.IsZero() ||
		!slices.Equal(bases(sec.Batches, cBase), []int64{0, 5, 10}) {
		t.Fatalf("section = %+v, want batches 0, 5, 10 below cleaning point 15", sec)
	}
	b := sec.Batches[1]
	if b.LastOffset != 9 || b.RecordCount != 5 || b.FileKey == "" || b.ByteLength != 500 || b.AppendTime <= 0 {
		t.Errorf("batch 5 = %+v", b)
	}
	if sec, err := s.CompactionSection(c, tp.ID, 0, time.Hour, 1<<30); err != nil || sec.CleaningPoint != 0 || len(sec.Batches) != 0 ||
		sec.YoungMs <= 0 || sec.YoungMs > sec.Now.UnixMilli() {
		t.Errorf("section with a 1h lag = %+v, %v; want empty at 0, stopped by the first batch's append time", sec, err)
	}
	if sec, err := s.CompactionSection(c, tp.ID, 0, 0, 1); err != nil || sec.CleaningPoint != 5 || !sec.Cut || len(sec.Batches) != 1 {
		t.Errorf("section of 1 byte = %+v, %v; want batch 0 only, cut at 5", sec, err)
	}
	if _, err := s.DeleteRecords(c, tp.ID, 0, 7); err != nil {
		t.Fatal(err)
	}
	if sec, err := s.CompactionSection(c, tp.ID, 0, 0, 1<<30); err != nil || !slices.Equal(bases(sec.Batches, cBase), []int64{5, 10}) {
		t.Errorf("section after delete-records to 7 = %+v, %v; want batches 5, 10", sec, err)
	}
	one := createTopic(t, s, "one", 1)
	commitOne(t, s, plain(one.ID, 0, 3))
	if sec, err := s.CompactionSection(c, one.ID, 0, 0, 1<<30); err != nil || len(sec.Batches) != 0 {
		t.Errorf("section of a one-batch log = %+v, %v; want empty (the tail is never compacted)", sec, err)
	}
	if _, err := s.CompactionSection(c, tp.ID, 3, 0, 1); !errors.Is(err, metadata.ErrPartitionNotFound) {
		t.Errorf("section of a missing partition: %v", err)
	}
}

// testCompactionCommit: rows are replaced by smaller ones keeping their
// offset range, or removed (a gap); rows changed meanwhile are skipped; a
// read at an offset in a gap continues at the next batch; a repeated
// commit changes nothing; emptied files die.
func testCompactionCommit(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := fourBatches(t, s, "cc")
	sec, err := s.CompactionSection(c, tp.ID, 0, 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	rw := func(b metadata.CompactBatch, into ...metadata.RewrittenBatch) metadata.BatchRewrite {
		return metadata.BatchRewrite{TopicID: tp.ID, Partition: 0, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset,
			FromFileID: b.FileID, FromByteOffset: b.ByteOffset, Into: into}
	}
	stale := rw(sec.Batches[2])
	stale.FromByteOffset++ // changed since: skipped
	cm := metadata.CompactionCommit{Key: key(), Size: 1000, Rewrites: []metadata.BatchRewrite{
		rw(sec.Batches[0], metadata.RewrittenBatch{BaseOffset: 0, LastOffset: 4, ByteOffset: 16, ByteLength: 120, RecordCount: 2, MaxTimestamp: 7}),
		rw(sec.Batches[1]),
		stale,
	}}
	for _, bad := range []metadata.CompactionCommit{
		{Key: cm.Key, Size: 1000, Rewrites: []metadata.BatchRewrite{rw(sec.Batches[0], metadata.RewrittenBatch{BaseOffset: 0, LastOffset: 5, ByteOffset: 16, ByteLength: 1, RecordCount: 1})}},
		{Key: cm.Key, Size: 1000, Rewrites: []metadata.BatchRewrite{rw(sec.Batches[0], metadata.RewrittenBatch{BaseOffset: 0, LastOffset: 1, ByteOffset: 16, ByteLength: 1, RecordCount: 3})}},
		{Key: "", Size: 1000},
	} {
		if _, err := s.CommitCompaction(c, bad); !errors.Is(err, metadata.ErrInvalidCommit) {
			t.Errorf("CommitCompaction(%+v) = %v, want ErrInvalidCommit", bad, err)
		}
	}
	res, err := s.CommitCompaction(c, cm)
	if err != nil || res.Replaced != 2 || res.Rows != 1 || res.FilesMarked != 2 {
		t.Fatalf("CommitCompaction = %+v, %v; want 2 replaced, 1 row, the 2 old files marked", res, err)
	}
	refs, st, err := s.FindBatches(c, tp.ID, 0, 0, 1<<20)
	if err != nil || st.HighWatermark != 20 || !slices.Equal(bases(refs, refBase), []int64{0, 10, 15}) {
		t.Fatalf("FindBatches(0) = %v, %+v, %v; want batches 0, 10, 15", refs, st, err)
	}
	if r := refs[0]; r.LastOffset != 4 || r.RecordCount != 2 || r.FileKey != cm.Key || r.ByteOffset != 16 || r.ByteLength != 120 ||
		r.MaxTimestamp != 7 || r.LogAppendTime != sec.Batches[0].AppendTime {
		t.Errorf("rewritten batch = %+v, want [0, 4] with 2 records in %s, append time %d kept", r, cm.Key, sec.Batches[0].AppendTime)
	}
	for _, off := range []int64{5, 7, 9} {
		refs, _, err := s.FindBatches(c, tp.ID, 0, off, 1<<20)
		if err != nil || !slices.Equal(bases(refs, refBase), []int64{10, 15}) {
			t.Errorf("FindBatches(%d) in the gap = %v, %v; want batches 10, 15", off, refs, err)
		}
	}
	if refs, _, err := s.FindBatches(c, tp.ID, 0, 3, 1); err != nil || !slices.Equal(bases(refs, refBase), []int64{0}) {
		t.Errorf("FindBatches(3) = %v, %v; want batch 0", refs, err)
	}
	if again, err := s.CommitCompaction(c, cm); err != nil || again != (metadata.CompactionResult{}) {
		t.Errorf("repeated CommitCompaction = %+v, %v; want nothing done", again, err)
	}
	sec, err = s.CompactionSection(c, tp.ID, 0, 0, 1<<30)
	if err != nil || !slices.Equal(bases(sec.Batches, cBase), []int64{0, 10}) || sec.Batches[0].RecordCount != 2 || sec.Batches[0].LastOffset != 4 {
		t.Fatalf("section after compaction = %+v, %v", sec, err)
	}
	// Removing the first batch too, with no new file: a read from the
	// log start finds the first batch left.
	res, err = s.CommitCompaction(c, metadata.CompactionCommit{Rewrites: []metadata.BatchRewrite{rw(sec.Batches[0])}})
	if err != nil || res.Replaced != 1 || res.Rows != 0 || res.FilesMarked != 1 {
		t.Fatalf("CommitCompaction without file = %+v, %v; want 1 replaced, the compacted file marked", res, err)
	}
	for _, off := range []int64{0, 4} {
		if refs, _, err := s.FindBatches(c, tp.ID, 0, off, 1<<20); err != nil || !slices.Equal(bases(refs, refBase), []int64{10, 15}) {
			t.Errorf("FindBatches(%d) before every batch = %v, %v; want batches 10, 15", off, refs, err)
		}
	}
	if off, err := s.ListOffset(c, tp.ID, 0, metadata.OffsetEarliest, 0); err != nil || off != 0 {
		t.Errorf("earliest = %d, %v; want 0 (compaction does not move the log start)", off, err)
	}
	files, err := s.DeletableFiles(c, 0, 10)
	if err != nil || len(files) != 3 {
		t.Errorf("deletable files = %v, %v; want the 2 original files and the compacted one", files, err)
	}
}
