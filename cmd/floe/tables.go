package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/objectstore/s3store"
	"github.com/floe-broker/floe/tableread"
)

// openTables opens the Iceberg catalog of cfg for the agent's reads of
// offsets below the raw log start (topics that set retention.raw.ms;
// agent/table.go) and returns the reader and what closes it.
func openTables(ctx context.Context, cfg iceberg.Config, tc tableread.Config, log *slog.Logger) (agent.TableReader, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := iceberg.Open(ctx, cfg, log)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg catalog for table reads: %w", err)
	}
	r, err := tableread.New(w, tc)
	if err != nil {
		_ = w.Close()
		return nil, nil, err
	}
	return r, func() {
		if err := w.Close(); err != nil {
			log.Warn("close iceberg catalog", "err", err)
		}
	}, nil
}

// devTables is floe dev's: the catalog and warehouse of its compactor.
func devTables(s IcebergSettings, a AgentSettings, dataDir string) func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
	return func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
		cfg, err := s.sqliteConfig(dataDir)
		if err != nil {
			return nil, nil, err
		}
		return openTables(ctx, cfg, a.tableConfig(), log)
	}
}

// agentTables is floe agent's: the catalog in the metadata PostgreSQL and
// the warehouse the compactor writes with its default settings
// (namespace floe, catalog floe, prefix iceberg under the S3 prefix).
func agentTables(a AgentSettings, pgURL string, s3c s3store.Config, s3Prefix string) func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
	return func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error) {
		return openTables(ctx, DefaultIcebergSettings().postgresConfig(pgURL, s3c, s3Prefix), a.tableConfig(), log)
	}
}

// tableConfig is the table reader's configuration of the settings.
func (a AgentSettings) tableConfig() tableread.Config {
	tc := tableread.DefaultConfig()
	tc.MaxReads, tc.WindowBytes, tc.ReadaheadBytes = a.TableReads, a.TableWindowBytes, a.TableReadaheadBytes
	return tc
}
