package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openTemp(t *testing.T) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, ":memory:")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	metadatatest.Run(t, func(t *testing.T) metadata.Store { return openTemp(t) })
}

// TestReopen checks that a database file keeps its data across Close and
// Open, and that reopening applies no migration twice.
func TestReopen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(ctx, path, WithReadConns(2), WithBusyTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "kept", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	pid, _, err := s.InitProducer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CommitFile(ctx, metadata.FileCommit{Key: "f1", Size: 100, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, Partition: 1, ByteLength: 50, RecordCount: 4, ProducerID: pid, BaseSequence: 0},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("CommitFile: %v %+v", err, res)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.DescribeTopic(ctx, "kept")
	if err != nil || d.ID != tp.ID || d.PartitionStates[1].HighWatermark != 4 {
		t.Fatalf("after reopen: %+v, %v", d, err)
	}
	// The producer state survived too: the retry is a duplicate.
	res, err = s.CommitFile(ctx, metadata.FileCommit{Key: "f2", Size: 100, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, Partition: 1, ByteLength: 50, RecordCount: 4, ProducerID: pid, BaseSequence: 0},
	}})
	if err != nil || !res[0].Duplicate || res[0].BaseOffset != 0 {
		t.Fatalf("retry after reopen: %v %+v", err, res)
	}
	var versions int
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&versions); err != nil || versions != 2 {
		t.Errorf("schema_migrations rows %d (%v), want 2", versions, err)
	}
}

func TestOpenOptions(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, ":memory:", WithReadConns(0)); err == nil || !strings.Contains(err.Error(), "ReadConns") {
		t.Errorf("Open(ReadConns 0) = %v, want an error naming ReadConns", err)
	}
	if _, err := Open(ctx, "/tmp/a?b.db"); err == nil {
		t.Error("Open(path with '?') succeeded")
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "missing-dir", "x.db")); err == nil {
		t.Error("Open(path in a missing directory) succeeded")
	}
}

func TestProducerState(t *testing.T) {
	b := func(epoch int16, seq, count int32) metadata.BatchCommit {
		return metadata.BatchCommit{ProducerID: 1, ProducerEpoch: epoch, BaseSequence: seq, RecordCount: count}
	}
	var st producerState
	if v := st.check(b(0, 17, 1), 0); v.accept || v.err == nil {
		t.Fatalf("no state, sequence 17 accepted: %+v", v)
	}
	if v := st.check(b(0, 0, 18), 0); !v.accept {
		t.Fatalf("no state, sequence 0: %+v", v)
	}
	st.accept(b(0, 0, 18), 83)
	for i := range int64(6) {
		bb := b(0, int32(18+i), 1)
		if v := st.check(bb, 0); !v.accept {
			t.Fatalf("in order %d: %+v", i, v)
		}
		st.accept(bb, 101+i)
	}
	if len(st.entries) != dedupeWindow || st.entries[0][0] != 19 {
		t.Fatalf("entries %v, want the last %d from sequence 19", st.entries, dedupeWindow)
	}
	if v := st.check(b(0, 19, 1), 0); !v.duplicate || v.dupOffset != 102 {
		t.Errorf("retry of 19: %+v", v)
	}
	if v := st.check(b(0, 19, 1), 103); !errors.Is(v.err, metadata.ErrOutOfOrderSequence) {
		t.Errorf("retry of 19 no longer in the log: %+v", v)
	}
	if v := st.check(b(0, 18, 1), 0); !errors.Is(v.err, metadata.ErrOutOfOrderSequence) {
		t.Errorf("retry of forgotten 18: %+v", v)
	}
	if v := st.check(b(1, 5, 1), 0); !errors.Is(v.err, metadata.ErrOutOfOrderSequence) {
		t.Errorf("new epoch at 5: %+v", v)
	}
	st.accept(b(1, 0, 2), 200)
	if len(st.entries) != 1 || st.epoch != 1 {
		t.Errorf("after epoch bump: %+v", st)
	}
	if v := st.check(b(0, 2, 1), 0); !errors.Is(v.err, metadata.ErrProducerFenced) {
		t.Errorf("old epoch: %+v", v)
	}
}
