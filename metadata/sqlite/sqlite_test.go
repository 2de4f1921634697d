package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/migrate"
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
	files, _ := fs.Glob(migrationFS, "migrations/*.sql")
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&versions); err != nil || versions != len(files) {
		t.Errorf("schema_migrations rows %d (%v), want %d (one per migration)", versions, err, len(files))
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

// TestMigrationChecksums: a database of the previous release (no checksum
// column) gets its checksums recorded; an applied migration whose SQL
// changed is refused, naming the file.
func TestMigrationChecksums(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "meta.db")
	// The previous release: 0001 only, schema_migrations without checksums.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	init, err := fs.ReadFile(migrationFS, "migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
		string(init),
		"INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open on the previous release's database: %v", err)
	}
	defer s.Close()
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		var sum string
		if err := s.r.QueryRowContext(ctx, "SELECT checksum FROM schema_migrations WHERE version = ?", m.Version).Scan(&sum); err != nil || sum != m.Checksum {
			t.Errorf("%s: checksum %q (%v), want %s", m.Name, sum, err, m.Checksum)
		}
	}

	edited := fstest.MapFS{}
	for _, m := range ms {
		q := m.SQL
		if m.Version == 1 {
			q = strings.Replace(q, "CREATE TABLE topics", "CREATE TABLE  topics", 1)
		}
		edited["migrations/"+m.Name] = &fstest.MapFile{Data: []byte(q)}
	}
	err = s.migrateFS(ctx, edited)
	if !errors.Is(err, migrate.ErrChanged) || !strings.Contains(err.Error(), "0001_init.sql") {
		t.Fatalf("migrate with an edited 0001 = %v, want ErrChanged naming 0001_init.sql", err)
	}
	if err := s.migrateFS(ctx, migrationFS); err != nil {
		t.Fatalf("migrate with the real files: %v", err)
	}
}

// TestCommitNotAppliedWhenBusy: another process holds the database's write
// lock past the busy timeout: the commit could not begin, and says so.
func TestCommitNotAppliedWhenBusy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(ctx, path, WithBusyTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	f := metadata.FileCommit{Key: "k", Size: 10, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, ByteLength: 10, RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence}}}
	_, err = s.CommitFile(ctx, f)
	if !metadata.NotApplied(err) || errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("CommitFile while another process writes = %v, want NotApplied", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	res, err := s.CommitFile(ctx, f)
	if err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("CommitFile once free = %+v, %v; want offset 0", res, err)
	}
}
