package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	icego "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icegoio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses
	_ "github.com/jackc/pgx/v5/stdlib"             // database/sql driver "pgx"
	_ "modernc.org/sqlite"                         // database/sql driver "sqlite"
)

// Catalog backends of Config.Backend.
const (
	BackendPostgres = "postgres" // production: the metadata PostgreSQL, an S3 warehouse
	BackendSQLite   = "sqlite"   // floe dev: a SQLite file, a local warehouse folder
)

// DefaultCatalogName is the catalog name floe writes in the catalog
// tables' catalog_name column; Spark and Trino must be set up with it.
const DefaultCatalogName = "floe"

// Config locates a catalog and its warehouse.
type Config struct {
	// Backend is BackendPostgres or BackendSQLite.
	Backend string
	// DSN is the PostgreSQL URL (the same database as floe's metadata is
	// fine: the catalog's tables are iceberg_tables and
	// iceberg_namespace_properties), or the SQLite file's path.
	DSN string
	// CatalogName is the catalog_name of the catalog's rows.
	CatalogName string
	// Warehouse is where tables live: s3://bucket/prefix for PostgreSQL,
	// a local folder (absolute path) for SQLite, which the catalog is
	// given as a file:// URI (tables, metadata and data files are named
	// file:///…).
	Warehouse string
	// S3 endpoint, region and keys of an s3:// warehouse. An endpoint
	// switches to path-style addressing (S3-compatible servers).
	S3Endpoint, S3Region, S3AccessKey, S3SecretKey string
	// Writer options: namespace, target file size, retries.
	Options Options
}

// DefaultPostgresConfig returns the production configuration: the
// catalog in the PostgreSQL at dsn, tables under s3://bucket/iceberg.
func DefaultPostgresConfig(dsn, bucket string) Config {
	return Config{
		Backend:     BackendPostgres,
		DSN:         dsn,
		CatalogName: DefaultCatalogName,
		Warehouse:   "s3://" + bucket + "/iceberg",
		S3Region:    "us-east-1",
	}
}

// DefaultSQLiteConfig returns floe dev's configuration: the catalog in
// dir/iceberg.db, tables under dir/warehouse.
func DefaultSQLiteConfig(dir string) Config {
	return Config{
		Backend:     BackendSQLite,
		DSN:         filepath.Join(dir, "iceberg.db"),
		CatalogName: DefaultCatalogName,
		Warehouse:   filepath.Join(dir, "warehouse"),
	}
}

// validate checks c; its errors name the field.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.DSN == "" {
		return bad("DSN is empty")
	}
	if c.CatalogName == "" || strings.ContainsAny(c.CatalogName, ". ") {
		return bad("CatalogName %q must be set, without dots or spaces", c.CatalogName)
	}
	if err := ValidateNamespace(c.Options.withDefaults().Namespace); err != nil {
		return bad("Options.Namespace: %v", err)
	}
	switch c.Backend {
	case BackendPostgres:
		u, err := url.Parse(c.Warehouse)
		if err != nil || u.Scheme != "s3" || u.Host == "" {
			return bad("Warehouse %q must be s3://bucket/prefix for the %s backend", c.Warehouse, c.Backend)
		}
		if c.S3Endpoint != "" && (c.S3AccessKey == "" || c.S3SecretKey == "") {
			return bad("S3AccessKey and S3SecretKey are needed with S3Endpoint %q", c.S3Endpoint)
		}
	case BackendSQLite:
		if !filepath.IsAbs(c.Warehouse) {
			return bad("Warehouse %q must be an absolute folder path for the %s backend", c.Warehouse, c.Backend)
		}
	default:
		return bad("Backend %q is neither %q nor %q", c.Backend, BackendPostgres, BackendSQLite)
	}
	return nil
}

// catalogProps returns the catalog's properties: warehouse and S3 IO.
func (c Config) catalogProps() icego.Properties {
	warehouse := strings.TrimSuffix(c.Warehouse, "/")
	if c.Backend == BackendSQLite {
		// A file:// URI, not a bare path: the catalog places tables and
		// files under it, and Java's FileIOs (Spark, Trino) resolve a
		// location by its scheme.
		warehouse = (&url.URL{Scheme: "file", Path: filepath.ToSlash(warehouse)}).String()
	}
	props := icego.Properties{"warehouse": warehouse}
	if c.Backend == BackendPostgres {
		for k, v := range map[string]string{
			icegoio.S3EndpointURL:     c.S3Endpoint,
			icegoio.S3Region:          c.S3Region,
			icegoio.S3AccessKeyID:     c.S3AccessKey,
			icegoio.S3SecretAccessKey: c.S3SecretKey,
		} {
			if v != "" {
				props[k] = v
			}
		}
	}
	return props
}

// Open connects to the catalog of cfg (creating its tables when
// missing) and returns a Writer over it; Close closes the database
// handle.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Writer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var (
		db      *sql.DB
		err     error
		dialect sqlcat.SupportedDialect
	)
	switch cfg.Backend {
	case BackendPostgres:
		dialect = sqlcat.Postgres
		db, err = sql.Open("pgx", cfg.DSN)
	case BackendSQLite:
		dialect = sqlcat.SQLite
		if dir := filepath.Dir(cfg.DSN); !strings.Contains(cfg.DSN, "?") {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("iceberg: catalog folder: %w", err)
			}
		}
		db, err = sql.Open("sqlite", sqliteDSN(cfg.DSN))
		if err == nil {
			// One connection: SQLite has one writer, and waiting in the
			// pool beats "database is locked".
			db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg: open %s catalog: %w", cfg.Backend, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("iceberg: reach %s catalog: %w", cfg.Backend, err)
	}
	cat, err := newCatalog(ctx, cfg, db, dialect)
	if err != nil {
		if !errors.Is(err, errCatalogAbandoned) { // else db is closed once the open ends
			db.Close()
		}
		return nil, fmt.Errorf("iceberg: open %s catalog: %w", cfg.Backend, err)
	}
	w, err := NewWriter(cat, cfg.Options, log)
	if err != nil {
		cat.Close()
		db.Close()
		return nil, err
	}
	if cfg.Backend == BackendPostgres {
		if w.aws, err = conditionalAWS(ctx, cfg.catalogProps()); err != nil {
			cat.Close()
			db.Close()
			return nil, err
		}
	}
	w.close = func() error {
		cerr := cat.Close()
		if err := db.Close(); err != nil {
			return fmt.Errorf("iceberg: close catalog: %w", err)
		}
		return cerr
	}
	return w, nil
}

// catalogLockKey is the pg_advisory_xact_lock key serialising the
// creation of the catalog's tables (metadata/postgres uses another key
// for its migrations).
const catalogLockKey int64 = 0x666c6f6549636562 // "floeIceb"

// newCatalog is sqlcat.NewCatalog, which creates the catalog's tables
// when missing. On PostgreSQL it runs under an advisory lock: two
// processes' CREATE TABLE IF NOT EXISTS at once is not atomic there (the
// loser fails on pg_type's unique index, `type "iceberg_tables" already
// exists`), which made one of two compactor replicas starting together
// on a fresh database exit. The lock is a transaction's, on a connection
// of its own, so that nothing can leave it held.
func newCatalog(ctx context.Context, cfg Config, db *sql.DB, dialect sqlcat.SupportedDialect) (*sqlcat.Catalog, error) {
	if cfg.Backend != BackendPostgres {
		if err := createJavaCatalogTables(ctx, db); err != nil {
			return nil, err
		}
		return openSQLCatalog(ctx, cfg, db, dialect)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", catalogLockKey); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := createJavaCatalogTables(ctx, db); err != nil {
		return nil, err
	}
	return openSQLCatalog(ctx, cfg, db, dialect)
}

// errCatalogAbandoned: ctx ended while sqlcat.NewCatalog ran; its
// database handle is closed once it returns (openSQLCatalog).
var errCatalogAbandoned = errors.New("iceberg: catalog open abandoned")

// newSQLCatalog is sqlcat.NewCatalog (a variable for tests).
var newSQLCatalog = sqlcat.NewCatalog

// openSQLCatalog is sqlcat.NewCatalog bounded by ctx. NewCatalog runs its
// statements (iceberg-go's CREATE TABLE IF NOT EXISTS, the schema
// version's queries) without a context, so a server that hangs (paused,
// or its packets lost) would hang the open, and the table read or the
// start waiting on it, for as long as the server does, past any
// deadline. It runs in a goroutine of its own: when ctx ends first the
// caller gets errCatalogAbandoned at once, and the goroutine closes the
// catalog and db once NewCatalog returns (when the server answers or the
// connection fails); db is then no longer the caller's to close.
func openSQLCatalog(ctx context.Context, cfg Config, db *sql.DB, dialect sqlcat.SupportedDialect) (*sqlcat.Catalog, error) {
	type opened struct {
		cat *sqlcat.Catalog
		err error
	}
	done := make(chan opened, 1)
	go func() {
		cat, err := newSQLCatalog(cfg.CatalogName, db, dialect, cfg.catalogProps())
		done <- opened{cat, err}
	}()
	select {
	case o := <-done:
		return o.cat, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.cat != nil {
				_ = o.cat.Close()
			}
			_ = db.Close()
		}()
		return nil, fmt.Errorf("%w: %w", errCatalogAbandoned, ctx.Err())
	}
}

// javaCatalogDDL creates the catalog's tables as Iceberg's Java
// JdbcCatalog does (JdbcUtil, schema version V1: with iceberg_type), the
// same columns, order, types and keys, on PostgreSQL and SQLite alike.
// iceberg-go's own CREATE TABLE IF NOT EXISTS, run after, then finds
// them; its layout (unbounded varchar, iceberg_type second) reads the
// same but is not what Java makes. Trino's JDBC catalog never creates
// the tables and fails every query without them: `floe compactor` (and
// `floe dev`) create them at start, before any table exists.
var javaCatalogDDL = []string{
	`CREATE TABLE IF NOT EXISTS iceberg_tables (catalog_name VARCHAR(255) NOT NULL, ` +
		`table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, ` +
		`metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), ` +
		`iceberg_type VARCHAR(5), PRIMARY KEY (catalog_name, table_namespace, table_name))`,
	`CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL, ` +
		`namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), ` +
		`PRIMARY KEY (catalog_name, namespace, property_key))`,
}

func createJavaCatalogTables(ctx context.Context, db *sql.DB) error {
	for _, ddl := range javaCatalogDDL {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("create catalog tables: %w", err)
		}
	}
	return nil
}

// sqliteDSN adds a busy timeout and WAL to a SQLite file path.
func sqliteDSN(path string) string {
	if strings.Contains(path, "?") {
		return path
	}
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
}
