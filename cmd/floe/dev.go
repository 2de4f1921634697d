package main

import (
	"context"
	"fmt"
	"io"
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
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe dev", "", `Run an agent on a local directory (the object store) and SQLite (the
metadata store), until SIGINT or SIGTERM: for development.`, 0, 0)
	fs := cmd.fs
	var c commonServerFlags
	c.register(fs, devGRPCAddr, devMetricsAddr)
	dataDir := fs.String("data", "./data", "folder holding all of floe's data (objects/ and metadata.db)")
	ice := addIcebergFlags(fs)
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
	}
	sc, err := c.config(stderr)
	if err != nil {
		return err
	}
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
	sc.Background = ice.devCompactor(dataDir)
	return serve(ctx, sc, open, prometheus.NewRegistry())
}
