package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/migrate"
)

// oldCommitSQL is how the previous release commits a file (its
// postgres/commit.go): floe_commit_file with 12 arguments, 4 results.
const oldCommitSQL = `SELECT o_base, o_dup, o_err, o_append_time
	FROM floe_commit_file($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// oldCommit commits plain batches, one per partition given, as the
// previous release does, and returns their base offsets and refusal codes.
func oldCommit(ctx context.Context, pool *pgxpool.Pool, key string, topic int64, parts []int32, pids []int64) ([]*int64, []int16, error) {
	n := len(parts)
	topics, off, length, count, ts := make([]int64, n), make([]int64, n), make([]int64, n), make([]int32, n), make([]int64, n)
	var seq []int32
	var epoch []int16
	for i := range parts {
		topics[i], off[i], length[i], count[i] = topic, int64(i)*10, 10, 2
	}
	var pid64 []int64
	if pids != nil {
		pid64, epoch, seq = pids, make([]int16, n), make([]int32, n)
	}
	var (
		base  []*int64
		dup   []*int64
		codes []int16
		at    int64
	)
	err := pool.QueryRow(ctx, oldCommitSQL, key, int64(n)*10, topics, parts, off, length, count, ts,
		pid64, epoch, seq, "floe_commits").Scan(&base, &dup, &codes, &at)
	return base, codes, err
}

// previousReleaseSchema migrates a database as the previous release did:
// 0001 and 0002, recorded without checksums in its schema_migrations.
func previousReleaseSchema(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		for v, name := range []string{"0001_init.sql", "0002_commit_file.sql"} {
			q, err := fs.ReadFile(migrationFS, "migrations/"+name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(q)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", v+1, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("previous release's schema: %v", err)
	}
}

// TestRollingUpgrade upgrades a database of the previous release while its
// agents keep committing through floe_commit_file, then runs old and new
// commits concurrently on the same partitions: offsets stay dense, every
// batch reads back, and the old entry point gained idempotence too.
func TestRollingUpgrade(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	previousReleaseSchema(t, ctx, pool)
	var topicID int64
	if err := pool.QueryRow(ctx, `WITH t AS (INSERT INTO topics (name, partitions) VALUES ('up', 4) RETURNING id)
		INSERT INTO partitions (topic_id, partition) SELECT t.id, g FROM t, generate_series(0, 3) g RETURNING topic_id`).Scan(&topicID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := oldCommit(ctx, pool, "before-upgrade", topicID, []int32{0, 1}, nil); err != nil {
		t.Fatalf("old commit before the upgrade: %v", err)
	}

	s := open(t, dsn) // the new release: backfills checksums, applies 0003
	rows, err := pool.Query(ctx, "SELECT name, checksum FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	sums, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Checksum string }])
	if err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	ms, _ := migrate.Load(migrationFS, "migrations")
	if len(sums) != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", len(sums), len(ms))
	}
	for i, m := range ms {
		if sums[i].Name != m.Name || sums[i].Checksum != m.Checksum {
			t.Errorf("schema_migrations row %d = %+v, want %s with checksum %s", i, sums[i], m.Name, m.Checksum)
		}
	}

	// Old and new agents commit at once, each file on all four partitions.
	const files = 40
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 2*files)
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range files / 4 {
				key := fmt.Sprintf("g%d/%d", g, i)
				if g%2 == 0 {
					if _, codes, err := oldCommit(ctx, pool, "old/"+key, topicID, []int32{3, 1, 0, 2}, nil); err != nil || codes[0] != 0 {
						errs <- fmt.Errorf("old commit %s: %v %v", key, codes, err)
					}
					continue
				}
				f := metadata.FileCommit{Key: "new/" + key, Size: 40}
				for j, p := range []int32{2, 0, 3, 1} {
					f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: topicID, Partition: p, ByteOffset: int64(j) * 10,
						ByteLength: 10, RecordCount: 2, ProducerID: -1, BaseSequence: metadata.NoSequence})
				}
				if res, err := s.CommitFile(ctx, f); err != nil || res[0].Err != nil {
					errs <- fmt.Errorf("new commit %s: %+v %v", key, res, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for p := range int32(4) {
		refs, st, err := s.FindBatches(ctx, topicID, p, 0, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		next, old, new := int64(0), 0, 0
		for _, r := range refs {
			if r.BaseOffset != next {
				t.Fatalf("partition %d: batch at %d, want %d (offsets not dense)", p, r.BaseOffset, next)
			}
			next = r.LastOffset + 1
			switch {
			case strings.HasPrefix(r.FileKey, "old/"):
				old++
			case strings.HasPrefix(r.FileKey, "new/"):
				new++
			}
		}
		if next != st.HighWatermark || old != files/2 || new != files/2 {
			t.Errorf("partition %d: %d old and %d new batches up to %d (high watermark %d), want %d each",
				p, old, new, next, st.HighWatermark, files/2)
		}
	}

	// The old entry point answers a repeated key with the first results,
	// and an unknown producer as an out of order sequence (codes it knows).
	first, _, err := oldCommit(ctx, pool, "old/g0/0", topicID, []int32{3, 1, 0, 2}, nil)
	if err != nil || first[0] == nil {
		t.Fatalf("old commit of a committed key: %v, %v; want its first results", first, err)
	}
	_, codes, err := oldCommit(ctx, pool, "old/unknown-producer", topicID, []int32{0}, []int64{1 << 40})
	if err != nil || codes[0] != 3 {
		t.Fatalf("old commit of an unknown producer: codes %v, %v; want 3", codes, err)
	}
	// A file committed before the upgrade has no stored results: a new
	// commit of its key says the outcome is unknown, and writes nothing.
	hw := func() int64 {
		off, err := s.ListOffset(ctx, topicID, 0, metadata.OffsetLatest, 0)
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	before := hw()
	_, err = s.CommitFile(ctx, metadata.FileCommit{Key: "before-upgrade", Size: 20, Batches: []metadata.BatchCommit{
		{TopicID: topicID, ByteLength: 10, RecordCount: 2, ProducerID: -1, BaseSequence: metadata.NoSequence},
		{TopicID: topicID, Partition: 1, ByteOffset: 10, ByteLength: 10, RecordCount: 2, ProducerID: -1, BaseSequence: metadata.NoSequence}}})
	if err == nil || metadata.NotApplied(err) || hw() != before {
		t.Fatalf("re-commit of a pre-upgrade file: %v (high watermark %d, was %d); want an ambiguous error, nothing written", err, hw(), before)
	}
}

// TestChangedMigrationRefused edits an applied migration: the store
// refuses to start, naming the file.
func TestChangedMigrationRefused(t *testing.T) {
	dsn := testenv.Postgres(t)
	s := open(t, dsn)
	edited := fstest.MapFS{}
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		q := m.SQL
		if m.Version == 2 {
			q += "\n-- edited after it was applied\n"
		}
		edited["migrations/"+m.Name] = &fstest.MapFile{Data: []byte(q)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = migrateFS(ctx, s.pool, edited)
	if !errors.Is(err, migrate.ErrChanged) || !strings.Contains(err.Error(), "0002_commit_file.sql") {
		t.Fatalf("migrate with an edited 0002 = %v, want ErrChanged naming 0002_commit_file.sql", err)
	}
	if err := migrateFS(ctx, s.pool, migrationFS); err != nil {
		t.Fatalf("migrate with the real files: %v", err)
	}
}
