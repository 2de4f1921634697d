// Package sqlite is the embedded implementation of metadata.Store, for
// `floe dev` and single-process deployments: one SQLite database file in
// WAL mode (modernc.org/sqlite, no cgo).
//
// Writes go through one connection and BEGIN IMMEDIATE transactions, so they
// are serialised in the process and never fail on lock upgrades; reads use a
// small pool of read-only connections and see a snapshot per call. The clock
// is Go's. Notices are delivered in process only: a second process sharing
// the file does not see this one's notices.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/migrate"
	"github.com/floe-broker/floe/metadata/internal/notify"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures a Store.
type Options struct {
	// Logger receives notable events; nil discards.
	Logger *slog.Logger
	// BusyTimeout is how long a connection waits for another process's
	// lock on the file before failing.
	BusyTimeout time.Duration
	// ReadConns bounds the read-only connection pool.
	ReadConns int
}

// DefaultOptions returns the options Open starts from.
func DefaultOptions() Options {
	return Options{
		Logger:      slog.New(slog.DiscardHandler),
		BusyTimeout: 5 * time.Second,
		ReadConns:   4,
	}
}

func (o Options) validate() error {
	switch {
	case o.Logger == nil:
		return errors.New("metadata: sqlite options: Logger is nil")
	case o.BusyTimeout < 0:
		return fmt.Errorf("metadata: sqlite options: BusyTimeout %v is negative", o.BusyTimeout)
	case o.ReadConns < 1:
		return fmt.Errorf("metadata: sqlite options: ReadConns %d, want >= 1", o.ReadConns)
	}
	return nil
}

// Option changes one of DefaultOptions.
type Option func(*Options)

// WithOptions replaces all options.
func WithOptions(o Options) Option { return func(p *Options) { *p = o } }

// WithLogger sets Options.Logger.
func WithLogger(l *slog.Logger) Option { return func(o *Options) { o.Logger = l } }

// WithBusyTimeout sets Options.BusyTimeout.
func WithBusyTimeout(d time.Duration) Option { return func(o *Options) { o.BusyTimeout = d } }

// WithReadConns sets Options.ReadConns.
func WithReadConns(n int) Option { return func(o *Options) { o.ReadConns = n } }

// Store is a metadata.Store on one SQLite file. It is safe for concurrent
// use by many goroutines of one process.
type Store struct {
	opts Options
	w    *sql.DB // one connection, BEGIN IMMEDIATE
	r    *sql.DB // read-only pool
	hub  *notify.Hub
	// aclSignal announces ACL changes (auth.go).
	aclSignal *notify.Signal
	tempDir   string // removed at Close when the path was ":memory:"

	closeMu sync.Mutex
	closed  bool
}

var _ metadata.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A path of "" or ":memory:" is a throwaway database in
// a temporary directory removed by Close.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := DefaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("metadata: sqlite path %q must not contain '?' or '#'", path)
	}
	s := &Store{opts: o, hub: notify.New(notify.DefaultBuffer), aclSignal: notify.NewSignal()}
	if path == "" || path == ":memory:" {
		dir, err := os.MkdirTemp("", "floe-sqlite-")
		if err != nil {
			return nil, fmt.Errorf("metadata: sqlite temp dir: %w", err)
		}
		s.tempDir, path = dir, filepath.Join(dir, "metadata.db")
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", o.BusyTimeout.Milliseconds())
	var err error
	// page_size applies to a new database only, before WAL mode is set
	// (the _journal_mode key is applied after the _pragma list); bigger
	// pages mean fewer WAL frames per commit.
	s.w, err = sql.Open("sqlite", "file:"+path+"?"+busy+"&_pragma=page_size(16384)&_pragma=cache_size(-65536)"+
		"&_journal_mode=WAL&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err == nil {
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		err = s.migrate(ctx)
	}
	if err == nil {
		s.r, err = sql.Open("sqlite", "file:"+path+"?"+busy+"&_pragma=cache_size(-16384)&_pragma=query_only(1)")
	}
	if err == nil {
		s.r.SetMaxOpenConns(o.ReadConns)
		s.r.SetMaxIdleConns(o.ReadConns)
		err = s.r.PingContext(ctx)
	}
	if err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("metadata: open sqlite %s: %w", path, err)
	}
	return s, nil
}

// migrate applies the embedded migrations the database lacks, in one
// write transaction.
func (s *Store) migrate(ctx context.Context) error {
	return s.migrateFS(ctx, migrationFS)
}

// migrateFS applies the migrations of fsys's migrations folder.
func (s *Store) migrateFS(ctx context.Context, fsys fs.FS) error {
	ms, err := migrate.Load(fsys, "migrations")
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		// Checksums came after the table: a database of an earlier
		// release gets the column here, and its rows their checksums.
		var hasChecksum bool
		if err := tx.QueryRowContext(ctx, "SELECT count(*) > 0 FROM pragma_table_info('schema_migrations') WHERE name = 'checksum'").
			Scan(&hasChecksum); err != nil {
			return err
		}
		if !hasChecksum {
			if _, err := tx.ExecContext(ctx, "ALTER TABLE schema_migrations ADD COLUMN checksum TEXT"); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, "SELECT version, name, coalesce(checksum, '') FROM schema_migrations ORDER BY version")
		if err != nil {
			return err
		}
		var applied []migrate.Applied
		for rows.Next() {
			var a migrate.Applied
			if err := rows.Scan(&a.Version, &a.Name, &a.Checksum); err != nil {
				rows.Close()
				return err
			}
			applied = append(applied, a)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		return migrate.Apply(ms, applied, func(q string) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		}, func(m migrate.Migration) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)",
				m.Version, m.Name, time.Now().UnixMilli(), m.Checksum)
			return err
		}, func(m migrate.Migration) error {
			_, err := tx.ExecContext(ctx, "UPDATE schema_migrations SET checksum = ? WHERE version = ?", m.Checksum, m.Version)
			return err
		})
	})
}

// write runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return ctxErr(ctx, err)
	}
	return ctxErr(ctx, tx.Commit())
}

// ctxErr prefers ctx's error: when ctx ends mid-transaction database/sql
// rolls back, and the statement in flight fails with a less telling error.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// read runs fn in a read-only transaction: one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return ctxErr(ctx, fn(tx))
}

// Close closes every Notices channel and the database; a ":memory:"
// database is deleted.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	s.hub.Close()
	s.aclSignal.Close()
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if s.tempDir != "" {
		errs = append(errs, os.RemoveAll(s.tempDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("metadata: close sqlite: %w", err)
	}
	return nil
}

// checkOpen returns ErrClosed once Close was called.
func (s *Store) checkOpen() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return metadata.ErrClosed
	}
	return nil
}

// wrap turns a database error into the store's error for op, passing the
// package's sentinels through.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.checkOpen() != nil {
		return fmt.Errorf("metadata: %s: %w", op, metadata.ErrClosed)
	}
	for _, sentinel := range []error{metadata.ErrTopicExists, metadata.ErrTopicNotFound, metadata.ErrPartitionNotFound,
		metadata.ErrInvalidCommit, metadata.ErrClosed} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	var oor *metadata.OffsetOutOfRangeError
	if errors.As(err, &oor) {
		return err
	}
	return fmt.Errorf("metadata: %s: %w", op, err)
}

// Notices returns a channel of this process's commit notices.
func (s *Store) Notices(ctx context.Context) (<-chan metadata.Notice, error) {
	return s.hub.Subscribe(ctx)
}

// InitProducer allocates the next producer id.
func (s *Store) InitProducer(ctx context.Context) (int64, int16, error) {
	if err := s.checkOpen(); err != nil {
		return 0, 0, err
	}
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "UPDATE sequences SET value = value + 1 WHERE name = 'producer_id' RETURNING value").Scan(&id)
	})
	if err != nil {
		return 0, 0, s.wrap("init producer", err)
	}
	return id, 0, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := s.r.PingContext(ctx); err != nil {
		return s.wrap("ping", err)
	}
	return nil
}
