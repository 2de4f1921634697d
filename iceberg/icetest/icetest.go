// Package icetest gives tests of floe's Iceberg output their catalogs
// (PostgreSQL with an S3 warehouse, SQLite with a folder, both real,
// from internal/testenv) and a catalog wrapper that injects commit
// failures. Use it from a package whose TestMain calls testenv.Main.
package icetest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/internal/testenv"
)

// PostgresConfig returns a catalog in a fresh PostgreSQL database with
// its warehouse in a fresh bucket of the test S3 server.
func PostgresConfig(t testing.TB) iceberg.Config {
	t.Helper()
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	cfg := iceberg.DefaultPostgresConfig(dsn, s3.Bucket)
	cfg.S3Endpoint, cfg.S3Region = s3.Endpoint, s3.Region
	cfg.S3AccessKey, cfg.S3SecretKey = s3.AccessKey, s3.SecretKey
	return cfg
}

// SQLiteConfig returns a catalog in a SQLite file with a warehouse
// folder, both under t.TempDir().
func SQLiteConfig(t testing.TB) iceberg.Config {
	t.Helper()
	return iceberg.DefaultSQLiteConfig(t.TempDir())
}

// Backends are the two catalog set-ups, by name, for table tests.
var Backends = []struct {
	Name   string
	Config func(testing.TB) iceberg.Config
}{
	{"postgres", PostgresConfig},
	{"sqlite", SQLiteConfig},
}

// Open opens cfg's catalog and wraps it in a FaultCatalog; both are
// closed when t ends.
func Open(t testing.TB, cfg iceberg.Config, opts iceberg.Options) (*iceberg.Writer, *FaultCatalog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Options = opts
	base, err := iceberg.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("icetest: open %s catalog: %v", cfg.Backend, err)
	}
	t.Cleanup(func() {
		if err := base.Close(); err != nil {
			t.Errorf("icetest: close catalog: %v", err)
		}
	})
	fc := &FaultCatalog{Catalog: base.Catalog()}
	w, err := iceberg.NewWriter(fc, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return w, fc
}

// ErrInjected is the error FaultCatalog returns for an injected fault.
var ErrInjected = errors.New("icetest: injected fault")

// FaultCatalog is a catalog whose tables commit through it, so that a
// test can run code before each commit and change its outcome.
type FaultCatalog struct {
	catalog.Catalog

	mu sync.Mutex // protects the fields below
	// before runs before each commit; an error fails the commit
	// without reaching the catalog.
	before func(ctx context.Context, ident table.Identifier) error
	// after replaces each commit's error; it sees the catalog's.
	after   func(ident table.Identifier, err error) error
	commits int     // commits that reached the catalog
	errs    []error // errors the catalog returned for them
}

// BeforeCommit sets fn to run before each commit (nil: none); when it
// returns an error the commit fails with it and does not reach the
// catalog.
func (f *FaultCatalog) BeforeCommit(fn func(ctx context.Context, ident table.Identifier) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = fn
}

// AfterCommit sets fn to replace each commit's error (nil: none).
func (f *FaultCatalog) AfterCommit(fn func(ident table.Identifier, err error) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = fn
}

// FailNextCommits makes the next n commits return ErrInjected: after
// the catalog applied them when landed is true (a lost answer), instead
// of reaching the catalog otherwise.
func (f *FaultCatalog) FailNextCommits(n int, landed bool) {
	var mu sync.Mutex
	left := n
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if left == 0 {
			return false
		}
		left--
		return true
	}
	if landed {
		f.AfterCommit(func(_ table.Identifier, err error) error {
			if err == nil && take() {
				return ErrInjected
			}
			return err
		})
		return
	}
	f.BeforeCommit(func(context.Context, table.Identifier) error {
		if take() {
			return ErrInjected
		}
		return nil
	})
}

// Stats returns the commits that reached the catalog and the errors the
// catalog returned for them.
func (f *FaultCatalog) Stats() (commits int, errs []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits, append([]error(nil), f.errs...)
}

// LoadTable loads the table and binds its commits to f.
func (f *FaultCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := f.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, f), nil
}

// CommitTable runs the hooks around the catalog's commit.
func (f *FaultCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (meta table.Metadata, loc string, err error) {
	f.mu.Lock()
	before, after := f.before, f.after
	f.mu.Unlock()
	if before != nil {
		if err := before(ctx, ident); err != nil {
			return nil, "", err
		}
	}
	meta, loc, err = f.Catalog.CommitTable(ctx, ident, reqs, updates)
	f.mu.Lock()
	f.commits++
	if err != nil {
		f.errs = append(f.errs, err)
	}
	f.mu.Unlock()
	if after != nil {
		err = after(ident, err)
	}
	if err != nil {
		return nil, "", err
	}
	return meta, loc, nil
}
