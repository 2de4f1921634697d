package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// icebergFlags are the Iceberg output flags of `floe compactor` and
// `floe dev`: whether the compactor writes the topics' tables, and how.
type icebergFlags struct {
	enabled                        bool
	namespace, catalogName, prefix string
	targetFileSize, maxBytes       int64
}

// addIcebergFlags registers the Iceberg flags on fs.
func addIcebergFlags(fs *flag.FlagSet) *icebergFlags {
	f := &icebergFlags{}
	d := compactor.DefaultConfig()
	fs.BoolVar(&f.enabled, "iceberg", true, "write each topic (iceberg.enabled=true, the default) to its Iceberg table; retention waits for the table")
	fs.StringVar(&f.namespace, "iceberg-namespace", iceberg.DefaultNamespace, "Iceberg namespace of the tables ([a-z0-9_], no dots)")
	fs.StringVar(&f.catalogName, "iceberg-catalog", iceberg.DefaultCatalogName, "catalog name in the catalog tables (Spark and Trino must use the same)")
	fs.StringVar(&f.prefix, "iceberg-prefix", "iceberg", "warehouse prefix inside the bucket (floe compactor)")
	fs.Int64Var(&f.targetFileSize, "iceberg-target-file-size", iceberg.DefaultTargetFileSize, "target size of a table's data files, bytes")
	fs.Int64Var(&f.maxBytes, "iceberg-max-bytes", d.IcebergMaxBytes, "log bytes one pass appends to one table at most (held in memory as rows)")
	return f
}

func (f *icebergFlags) options() iceberg.Options {
	return iceberg.Options{Namespace: f.namespace, TargetFileSize: f.targetFileSize}
}

// postgresConfig is floe compactor's catalog: iceberg-go's SQL catalog in
// the metadata PostgreSQL, the warehouse in the log's bucket under its
// own prefix (under the log's -s3-prefix), with the compactor's S3
// settings.
func (f *icebergFlags) postgresConfig(pgURL string, s3c s3store.Config, s3Prefix string) iceberg.Config {
	cfg := iceberg.DefaultPostgresConfig(pgURL, s3c.Bucket)
	parts := []string{s3c.Bucket}
	for _, p := range []string{s3Prefix, f.prefix} {
		if p = strings.Trim(p, "/"); p != "" {
			parts = append(parts, p)
		}
	}
	cfg.Warehouse = "s3://" + strings.Join(parts, "/")
	cfg.CatalogName, cfg.Options = f.catalogName, f.options()
	cfg.S3Endpoint, cfg.S3AccessKey, cfg.S3SecretKey = s3c.Endpoint, s3c.AccessKey, s3c.SecretKey
	if s3c.Region != "" {
		cfg.S3Region = s3c.Region
	}
	return cfg
}

// sqliteConfig is floe dev's catalog: a SQLite file and a warehouse
// folder under the data folder.
func (f *icebergFlags) sqliteConfig(dataDir string) (iceberg.Config, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return iceberg.Config{}, fmt.Errorf("data folder: %w", err)
	}
	cfg := iceberg.DefaultSQLiteConfig(abs)
	cfg.CatalogName, cfg.Options = f.catalogName, f.options()
	return cfg, nil
}

// setup opens cfg's catalog into d (nothing when -iceberg=false) and
// returns what closes it.
func (f *icebergFlags) setup(ctx context.Context, d *compactor.Config, cfg iceberg.Config, log *slog.Logger) (closeFn func(), err error) {
	if !f.enabled {
		return func() {}, nil
	}
	if f.maxBytes < 1 {
		return nil, fmt.Errorf("flag -iceberg-max-bytes: %d must be >= 1", f.maxBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := iceberg.Open(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("iceberg catalog: %w", err)
	}
	d.Iceberg, d.IcebergMaxBytes = w, f.maxBytes
	return func() {
		if err := w.Close(); err != nil {
			log.Warn("close iceberg catalog", "err", err)
		}
	}, nil
}

// devCompactor is floe dev's background compactor with the Iceberg
// tables in the data folder (read once the flags are parsed).
func (f *icebergFlags) devCompactor(dataDir *string) func(ctx context.Context, meta metadata.Store, store objectstore.Store, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	return func(ctx context.Context, meta metadata.Store, store objectstore.Store, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
		cfg := compactor.DefaultConfig()
		cfg.Owner, cfg.Logger, cfg.Registerer = compactor.DefaultOwner(), log, reg
		icecfg, err := f.sqliteConfig(*dataDir)
		if err != nil {
			return nil, err
		}
		closeIce, err := f.setup(ctx, &cfg, icecfg, log)
		if err != nil {
			return nil, err
		}
		c, err := compactor.New(meta, store, cfg)
		if err != nil {
			closeIce()
			return nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer closeIce()
			_ = c.Run(ctx)
		}()
		return func() { cancel(); <-done }, nil
	}
}
