package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// Fixed local ports of `floe dev`.
const (
	devGRPCAddr    = "127.0.0.1:7070"
	devMetricsAddr = "127.0.0.1:7071"
)

func runDev(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c commonServerFlags
	c.register(fs, devGRPCAddr, devMetricsAddr)
	dataDir := fs.String("data", "./data", "folder holding all of floe's data (objects/ and metadata.db)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	sc, err := c.config(stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	store, err := objectstore.NewDir(filepath.Join(*dataDir, "objects"))
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	meta, err := sqlite.Open(startCtx, filepath.Join(*dataDir, "metadata.db"))
	if err != nil {
		return fmt.Errorf("metadata store: %w", err)
	}
	defer meta.Close()
	reg := prometheus.NewRegistry()
	stopCompactor, err := startDevCompactor(ctx, meta, store, reg, sc.Logger)
	if err != nil {
		return err
	}
	defer stopCompactor()
	return serve(ctx, sc, meta, store, reg)
}
