package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// Fixed local ports of `floe dev`.
const (
	devGRPCAddr    = "127.0.0.1:7070"
	devMetricsAddr = "127.0.0.1:7071"
	devKafkaAddr   = "127.0.0.1:9092"
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe dev", "", `Run an agent on a local directory (the object store) and SQLite (the
metadata store), until SIGINT or SIGTERM: for development.`, 0, 0)
	cf := registerConfig(cmd.fs, "dev")
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
	}
	c, err := cf.load(cmd.fs, os.Getenv)
	if err != nil {
		return err
	}
	sc := serverConfigOf(c, stderr)
	dataDir := &c.Dev.Data
	// Local files: nothing to wait for, a failure is final.
	open := func(ctx context.Context, _ *starter) (metadata.Store, objectstore.Store, error) {
		if err := os.MkdirAll(*dataDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("data folder: %w", err)
		}
		store, err := objectstore.NewDir(filepath.Join(*dataDir, "objects"))
		if err != nil {
			return nil, nil, fmt.Errorf("object store: %w", err)
		}
		startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		meta, err := sqlite.Open(startCtx, filepath.Join(*dataDir, "metadata.db"))
		if err != nil {
			return nil, nil, fmt.Errorf("metadata store: %w", err)
		}
		return meta, store, nil
	}
	// The compactor (retention, deletion, orphans, merging) runs in process.
	rest := &lateHandler{} // the Iceberg REST catalog, once the compactor opened it
	sc.Background = devCompactor(c.Compactor, c.Iceberg, *dataDir, rest)
	sc.Handlers = map[string]http.Handler{icebergRESTPath + "/": rest}
	if c.Iceberg.Enabled {
		sc.Tables = devTables(c.Iceberg, c.Agent, *dataDir)
	}
	sc.Ready = printConsoleURL(sc.Ready, stdout, sc.HTTPTLS.Enabled())
	return serve(ctx, sc, open, prometheus.NewRegistry())
}
