// Package postgres is the PostgreSQL implementation of metadata.Store, the
// one floe runs in production: many agents share one database.
//
// CommitFile is one round trip: a call of the PL/pgSQL function
// floe_commit_file_v2 (migrations/0003_commit_file_v2.sql), which records
// the file with its results (a second commit of the key answers with them),
// locks the file's partitions in (topic id, partition) order, and sequences
// the batches. CommitFiles commits several files in one pipelined
// transaction, their partitions locked first, all together, in that order
// (commit_files.go). The store's notifier announces the new high watermarks with
// NOTIFY after the commits, merged, outside their transactions (see
// notifier). PostgreSQL's clock is the one clock for append times. Schema
// migrations are embedded and applied at Open under an advisory lock, so
// agents may start together; applied ones are checked against their
// checksums. floe_commit_file, the previous release's entry point, stays
// (a wrapper of floe_commit_file_v2) for agents of that release during a
// rolling upgrade.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/migrate"
	"github.com/floe-broker/floe/metadata/internal/notify"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the pg_advisory_xact_lock key serialising migrations
// ("floemigr" in ASCII).
const migrationLockKey int64 = 0x666c6f656d696772

// Options configures a Store.
type Options struct {
	// Logger receives the listener's reconnects; nil discards.
	Logger *slog.Logger
	// MaxConns bounds the connection pool (the notice listener uses one
	// more, outside the pool).
	MaxConns int32
	// NotifyChannel is the LISTEN/NOTIFY channel commits are announced on.
	NotifyChannel string
	// ConnectTimeout bounds the first connection at Open and each of the
	// listener's reconnects.
	ConnectTimeout time.Duration
	// NotifyInCommit sends each commit's notice with pg_notify inside the
	// commit's transaction, as the previous release did. By default the
	// store's notifier sends them after the commits, merged (see notifier):
	// measured faster with concurrent committers (BenchmarkConcurrentCommits).
	NotifyInCommit bool
	// Tracer, optional, sees every statement of the pool (pgx's
	// QueryTracer; a BatchTracer too sees each statement of a batch):
	// for measuring statements per operation.
	Tracer pgx.QueryTracer
}

// DefaultOptions returns the options Open uses when given a zero field.
func DefaultOptions() Options {
	return Options{
		MaxConns:       16,
		NotifyChannel:  "floe_commits",
		ConnectTimeout: 10 * time.Second,
	}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxConns == 0 {
		o.MaxConns = d.MaxConns
	}
	if o.NotifyChannel == "" {
		o.NotifyChannel = d.NotifyChannel
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = d.ConnectTimeout
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.MaxConns < 1:
		return fmt.Errorf("metadata: postgres options: MaxConns %d, want >= 1", o.MaxConns)
	case len(o.NotifyChannel) > 63:
		return fmt.Errorf("metadata: postgres options: NotifyChannel %q longer than 63 bytes", o.NotifyChannel)
	case o.ConnectTimeout < 0:
		return fmt.Errorf("metadata: postgres options: ConnectTimeout %v is negative", o.ConnectTimeout)
	}
	return nil
}

// Store is a metadata.Store on PostgreSQL. It is safe for concurrent use.
type Store struct {
	opts    Options
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig // for the listener's own connection
	hub     *notify.Hub
	// aclSignal announces ACL changes (auth.go).
	aclSignal *notify.Signal
	notifier  *notifier       // nil with NotifyInCommit
	ctx       context.Context // ends at Close; parent of the listener
	cancel    context.CancelFunc
	listenMu  sync.Mutex    // protects ready and orders listener starts with Close
	ready     chan struct{} // closed once the listener first listens; nil before it starts
	wg        sync.WaitGroup
	closeMu   sync.Mutex
	closed    bool
}

var _ metadata.Store = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value
// string), checks that it answers within opts.ConnectTimeout, and brings its
// schema up to date. Zero fields of opts take DefaultOptions' values.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("metadata: postgres dsn: %w", err)
	}
	cfg.MaxConns = opts.MaxConns
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > opts.ConnectTimeout {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata: connect postgres: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	err = pool.Ping(pingCtx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("metadata: connect postgres: %w", err)
	}
	if err := migrateSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	sctx, scancel := context.WithCancel(context.Background())
	s := &Store{
		opts:      opts,
		pool:      pool,
		connCfg:   cfg.ConnConfig.Copy(),
		hub:       notify.New(notify.DefaultBuffer),
		aclSignal: notify.NewSignal(),
		ctx:       sctx,
		cancel:    scancel,
	}
	if !opts.NotifyInCommit {
		s.notifier = newNotifier(pool, opts.NotifyChannel, opts.Logger)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.notifier.run(sctx)
		}()
	}
	return s, nil
}

// migrateSchema applies the embedded migrations the database lacks, in one
// transaction holding an advisory lock.
func migrateSchema(ctx context.Context, pool *pgxpool.Pool) error {
	return migrateFS(ctx, pool, migrationFS)
}

// migrateFS applies the migrations of fsys's migrations folder.
func migrateFS(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) error {
	ms, err := migrate.Load(fsys, "migrations")
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		// Checksums came after the table: a database of an earlier
		// release gets the column here, and its rows their checksums.
		if _, err := tx.Exec(ctx, "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT version, name, coalesce(checksum, '') FROM schema_migrations ORDER BY version")
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (migrate.Applied, error) {
			var a migrate.Applied
			err := r.Scan(&a.Version, &a.Name, &a.Checksum)
			return a, err
		})
		if err != nil {
			return err
		}
		return migrate.Apply(ms, applied, func(q string) error {
			_, err := tx.Exec(ctx, q)
			return err
		}, func(m migrate.Migration) error {
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
				m.Version, m.Name, m.Checksum)
			return err
		}, func(m migrate.Migration) error {
			_, err := tx.Exec(ctx, "UPDATE schema_migrations SET checksum = $2 WHERE version = $1", m.Version, m.Checksum)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("metadata: migrate postgres schema: %w", err)
	}
	return nil
}

// Close stops the notice listener, closes every Notices channel and the
// connection pool.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	s.listenMu.Lock() // no listener starts after this
	s.cancel()
	s.listenMu.Unlock()
	s.wg.Wait()
	s.hub.Close()
	s.aclSignal.Close()
	s.pool.Close()
	return nil
}

// isClosed reports whether Close was called.
func (s *Store) isClosed() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closed
}

// wrap turns a database error into the store's error for op.
func (s *Store) wrap(op string, err error) error {
	if s.isClosed() {
		return fmt.Errorf("metadata: %s: %w", op, metadata.ErrClosed)
	}
	return fmt.Errorf("metadata: %s: %w", op, err)
}

// pgCode returns the SQLSTATE and constraint of a PostgreSQL error.
func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return s.wrap("ping", err)
	}
	return nil
}
