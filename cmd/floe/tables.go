package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/tableread"
)

// openTables returns the agent's reader of offsets below the raw log
// start (topics that set retention.raw.ms; agent/table.go) over the
// Iceberg catalog of cfg, and what closes it. The catalog opens on the
// first read that needs it (tableread.Lazy): an agent whose catalog is
// down starts and serves raw reads, and its table reads are Unavailable
// until the catalog answers.
func openTables(cfg iceberg.Config, tc tableread.Config, log *slog.Logger) (agent.TableReader, func(), error) {
	lazy, err := tableread.NewLazy(func(ctx context.Context) (tableread.Catalog, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		w, err := iceberg.Open(ctx, cfg, log)
		if err != nil {
			log.Warn("iceberg catalog for table reads unavailable", "err", err)
			return nil, fmt.Errorf("iceberg catalog for table reads: %w", err)
		}
		return w, nil
	}, tableread.DefaultRetryInterval)
	if err != nil {
		return nil, nil, err
	}
	r, err := tableread.New(lazy, tc)
	if err != nil {
		return nil, nil, err
	}
	return r, func() {
		if err := lazy.Close(); err != nil {
			log.Warn("close iceberg catalog", "err", err)
		}
	}, nil
}

// devTables is floe dev's: the catalog and warehouse of its compactor.
func devTables(s IcebergSettings, a AgentSettings, dataDir string) func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
	return func(_ context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
		cfg, err := s.sqliteConfig(dataDir)
		if err != nil {
			return nil, nil, err
		}
		return openTables(cfg, a.tableConfig(), log)
	}
}

// agentTables is floe agent's: the catalog and warehouse floe compactor
// writes with the same settings (tablesConfig: the iceberg namespace,
// catalog and prefix, under the S3 prefix, in the metadata PostgreSQL).
func agentTables(c Config) func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
	return func(_ context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
		return openTables(c.tablesConfig(), c.Agent.tableConfig(), log)
	}
}

// tablesConfig is the catalog of the topics' tables in PostgreSQL and S3:
// where floe compactor writes them and floe agent and floe table read
// them, one source for all three.
func (c Config) tablesConfig() iceberg.Config {
	return c.Iceberg.postgresConfig(c.Postgres.URL, c.s3Config(), c.S3.Prefix)
}

// tableConfig is the table reader's configuration of the settings.
func (a AgentSettings) tableConfig() tableread.Config {
	tc := tableread.DefaultConfig()
	tc.MaxReads, tc.WindowBytes, tc.ReadaheadBytes = a.TableReads, a.TableWindowBytes, a.TableReadaheadBytes
	return tc
}
