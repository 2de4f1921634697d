package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/rest"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// IcebergSettings are the compactor's Iceberg output (floe compactor and
// floe dev): whether it writes the topics' tables, and how. floe agent
// reads the same namespace, catalog and prefix to find the tables it
// serves old offsets from (tables.go): one source for both. The tags are
// those of the settings of a YAML config file.
type IcebergSettings struct {
	Enabled        bool   `yaml:"enabled" flag:"iceberg" cmds:"dev,compactor" help:"write each topic (iceberg.enabled=true, the default) to its Iceberg table; retention waits for the table"`
	Namespace      string `yaml:"namespace" flag:"iceberg-namespace" help:"Iceberg namespace of the tables ([a-z0-9_], no dots)"`
	Catalog        string `yaml:"catalog" flag:"iceberg-catalog" help:"catalog name in the catalog tables (Spark and Trino must use the same)"`
	Prefix         string `yaml:"prefix" flag:"iceberg-prefix" cmds:"agent,compactor" help:"warehouse prefix inside the bucket, under the S3 prefix (floe compactor, and floe agent reads the tables there; floe dev uses DATA/warehouse)"`
	TargetFileSize int64  `yaml:"target_file_size" flag:"iceberg-target-file-size" check:"positive" cmds:"dev,compactor" help:"target size of a table's data files, bytes"`
	MaxBytes       int64  `yaml:"max_bytes" flag:"iceberg-max-bytes" check:"positive" cmds:"dev,compactor" help:"log bytes one pass appends to one table at most (held in memory as rows)"`
	// Table maintenance (compactor/maintain.go).
	MaintainInterval  time.Duration `yaml:"maintain_interval" flag:"iceberg-maintain-interval" check:"nonneg" cmds:"dev,compactor" help:"least time between two maintenances of a table: snapshot expiry, small-file rewrite, orphan deletion, the table's retention (0: no maintenance)"`
	KeepSnapshots     int           `yaml:"keep_snapshots" flag:"iceberg-keep-snapshots" check:"positive" cmds:"dev,compactor" help:"snapshots a table keeps at least"`
	SnapshotAge       time.Duration `yaml:"snapshot_age" flag:"iceberg-snapshot-age" check:"nonneg" cmds:"dev,compactor" help:"snapshots older than this expire, beyond the kept ones and those superseded within orphan_age"`
	OrphanAge         time.Duration `yaml:"orphan_age" flag:"iceberg-orphan-age" check:"nonneg" cmds:"dev,compactor" help:"a file under a table's location that nothing references is deleted once this old, and a snapshot superseded less than this ago is kept, for the queries planned of it (more than the longest append and the longest query; 0: never)"`
	RewriteMinFiles   int           `yaml:"rewrite_min_files" flag:"iceberg-rewrite-min-files" check:"nonneg" cmds:"dev,compactor" help:"rewrite a day partition's small files (under 3/4 of the target size) once it has more than this many (0: no rewrite)"`
	RewriteMaxBytes   int64         `yaml:"rewrite_max_bytes" flag:"iceberg-rewrite-max-bytes" check:"nonneg" cmds:"dev,compactor" help:"bytes of small files one maintenance rewrites at most (0: twice the target file size; the rows of the files are held in memory)"`
	DropDeletedTopics bool          `yaml:"drop_deleted_topics" flag:"iceberg-drop-deleted-topics" cmds:"dev,compactor" help:"drop the tables of deleted topics (their rows are lost); false keeps them"`
	// The read-only REST catalog on the HTTP listener (icebergrest.go).
	RESTMaxRequestBytes int64 `yaml:"rest_max_request_bytes" flag:"iceberg-rest-max-request-bytes" check:"nonneg" cmds:"dev,compactor" help:"REST catalog (/iceberg): largest request body, bytes; every endpoint is a GET, a larger body gets 413 (0: none)"`
	RESTMaxPathBytes    int   `yaml:"rest_max_path_bytes" flag:"iceberg-rest-max-path-bytes" check:"positive" cmds:"dev,compactor" help:"REST catalog (/iceberg): longest request path and query, bytes (at least 64); a longer one gets 400"`
}

// DefaultIcebergSettings are the defaults: tables on, namespace and
// catalog floe, warehouse prefix iceberg.
func DefaultIcebergSettings() IcebergSettings {
	m, r := compactor.DefaultIcebergMaintainConfig(), rest.DefaultConfig()
	return IcebergSettings{Enabled: true, Namespace: iceberg.DefaultNamespace, Catalog: iceberg.DefaultCatalogName, Prefix: "iceberg",
		TargetFileSize: iceberg.DefaultTargetFileSize, MaxBytes: compactor.DefaultConfig().IcebergMaxBytes,
		MaintainInterval: m.Interval, KeepSnapshots: m.KeepSnapshots, SnapshotAge: m.SnapshotAge, OrphanAge: m.OrphanAge,
		RewriteMinFiles: m.RewriteMinFiles, RewriteMaxBytes: m.RewriteMaxBytes, DropDeletedTopics: m.DropDeletedTopics,
		RESTMaxRequestBytes: r.MaxRequestBytes, RESTMaxPathBytes: r.MaxPathBytes}
}

// validate checks the settings' rules beyond their ranges, naming the
// setting.
func (s IcebergSettings) validate() error {
	if err := iceberg.ValidateNamespace(s.Namespace); err != nil {
		return fmt.Errorf("iceberg.namespace: %w", err)
	}
	if s.RESTMaxPathBytes < rest.MinPathBytes {
		return fmt.Errorf("iceberg.rest_max_path_bytes: %d must be at least %d", s.RESTMaxPathBytes, rest.MinPathBytes)
	}
	return nil
}

// maintainConfig is the compactor's table maintenance of the settings.
func (s IcebergSettings) maintainConfig() compactor.IcebergMaintainConfig {
	return compactor.IcebergMaintainConfig{Interval: s.MaintainInterval, KeepSnapshots: s.KeepSnapshots, SnapshotAge: s.SnapshotAge,
		OrphanAge: s.OrphanAge, RewriteMinFiles: s.RewriteMinFiles, RewriteMaxBytes: s.RewriteMaxBytes, DropDeletedTopics: s.DropDeletedTopics}
}

func (s IcebergSettings) options() iceberg.Options {
	return iceberg.Options{Namespace: s.Namespace, TargetFileSize: s.TargetFileSize}
}

// postgresConfig is floe compactor's catalog: iceberg-go's SQL catalog in
// the metadata PostgreSQL, the warehouse in the log's bucket under its
// own prefix (under the log's S3 prefix), with the compactor's S3
// settings.
func (s IcebergSettings) postgresConfig(pgURL string, s3c s3store.Config, s3Prefix string) iceberg.Config {
	cfg := iceberg.DefaultPostgresConfig(pgURL, s3c.Bucket)
	parts := []string{s3c.Bucket}
	for _, p := range []string{s3Prefix, s.Prefix} {
		if p = strings.Trim(p, "/"); p != "" {
			parts = append(parts, p)
		}
	}
	cfg.Warehouse = "s3://" + strings.Join(parts, "/")
	cfg.CatalogName, cfg.Options = s.Catalog, s.options()
	cfg.S3Endpoint, cfg.S3AccessKey, cfg.S3SecretKey = s3c.Endpoint, s3c.AccessKey, s3c.SecretKey
	if s3c.Region != "" {
		cfg.S3Region = s3c.Region
	}
	return cfg
}

// sqliteConfig is floe dev's catalog: a SQLite file and a warehouse
// folder under the data folder.
func (s IcebergSettings) sqliteConfig(dataDir string) (iceberg.Config, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return iceberg.Config{}, fmt.Errorf("data folder: %w", err)
	}
	cfg := iceberg.DefaultSQLiteConfig(abs)
	cfg.CatalogName, cfg.Options = s.Catalog, s.options()
	return cfg, nil
}

// setup opens cfg's catalog into d (nothing when the tables are off) and
// returns what closes it.
func (s IcebergSettings) setup(ctx context.Context, d *compactor.Config, cfg iceberg.Config, log *slog.Logger) (closeFn func(), err error) {
	if !s.Enabled {
		return func() {}, nil
	}
	if s.MaxBytes < 1 {
		return nil, &permanentError{fmt.Errorf("flag -iceberg-max-bytes: %d must be >= 1", s.MaxBytes)}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := iceberg.Open(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("iceberg catalog: %w", err)
	}
	d.Iceberg, d.IcebergMaxBytes, d.IcebergMaintain = w, s.MaxBytes, s.maintainConfig()
	return func() {
		if err := w.Close(); err != nil {
			log.Warn("close iceberg catalog", "err", err)
		}
	}, nil
}

// devSetup is setup for floe dev: the catalog and warehouse in dataDir.
func (s IcebergSettings) devSetup(ctx context.Context, d *compactor.Config, dataDir string, log *slog.Logger) (closeFn func(), err error) {
	cfg, err := s.sqliteConfig(dataDir)
	if err != nil {
		return nil, err
	}
	return s.setup(ctx, d, cfg, log)
}
