package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// commonServerFlags are the flags dev and agent share.
type commonServerFlags struct {
	listen, metricsListen string
	linger                time.Duration
	maxFileBytes          int
	maxBufferedBytes      int64
	cacheBytes            int64
	logLevel              string
}

func (c *commonServerFlags) register(fs *flag.FlagSet, listen, metrics string) {
	bd := batcher.DefaultConfig()
	ad := agent.DefaultConfig()
	fs.StringVar(&c.listen, "listen", listen, "gRPC listen address")
	fs.StringVar(&c.metricsListen, "metrics-listen", metrics, "HTTP address of /metrics and /healthz")
	fs.DurationVar(&c.linger, "linger", bd.Linger, "how long a file waits for more batches before it is flushed")
	fs.IntVar(&c.maxFileBytes, "max-file-bytes", bd.MaxFileBytes, "flush a file once it reaches this size")
	fs.Int64Var(&c.maxBufferedBytes, "max-buffered-bytes", bd.MaxBufferedBytes, "bytes accepted but not yet acknowledged before producers wait")
	fs.Int64Var(&c.cacheBytes, "cache-bytes", ad.CacheBytes, "read cache size")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
}

func (c *commonServerFlags) config(stderr io.Writer) (serverConfig, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return serverConfig{}, fmt.Errorf("flag -log-level: %q is not a level", c.logLevel)
	}
	sc := serverConfig{
		GRPCAddr: c.listen, MetricsAddr: c.metricsListen,
		Batcher: batcher.DefaultConfig(), Agent: agent.DefaultConfig(),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})),
	}
	sc.Batcher.Linger = c.linger
	sc.Batcher.MaxFileBytes = c.maxFileBytes
	sc.Batcher.MaxBufferedBytes = c.maxBufferedBytes
	sc.Agent.CacheBytes = c.cacheBytes
	if sc.Agent.MaxRequestBytes > c.maxFileBytes/2 {
		sc.Agent.MaxRequestBytes = max(c.maxFileBytes/2, sc.Agent.MaxRecordBytes)
	}
	return sc, nil
}

func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c commonServerFlags
	c.register(fs, ":7070", ":7071")
	pgURL := fs.String("postgres-url", os.Getenv("FLOE_POSTGRES_URL"), "PostgreSQL URL (env FLOE_POSTGRES_URL)")
	s3c := s3store.DefaultConfig()
	prefix := fs.String("s3-prefix", os.Getenv("FLOE_S3_PREFIX"), "key prefix inside the bucket (env FLOE_S3_PREFIX)")
	fs.StringVar(&s3c.Bucket, "s3-bucket", os.Getenv("FLOE_S3_BUCKET"), "S3 bucket (env FLOE_S3_BUCKET)")
	fs.StringVar(&s3c.Endpoint, "s3-endpoint", os.Getenv("FLOE_S3_ENDPOINT"), "S3 endpoint URL for S3-compatible stores (env FLOE_S3_ENDPOINT)")
	fs.StringVar(&s3c.Region, "s3-region", envOr("AWS_REGION", s3c.Region), "S3 region (env AWS_REGION)")
	fs.StringVar(&s3c.AccessKey, "s3-access-key", "", "S3 access key (default: the AWS credential chain, e.g. AWS_ACCESS_KEY_ID)")
	fs.StringVar(&s3c.SecretKey, "s3-secret-key", "", "S3 secret key (default: the AWS credential chain, e.g. AWS_SECRET_ACCESS_KEY)")
	fs.BoolVar(&s3c.PathStyle, "s3-path-style", os.Getenv("FLOE_S3_PATH_STYLE") == "true", "path-style addressing (most S3-compatible servers)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	sc, err := c.config(stderr)
	if err != nil {
		return err
	}
	if *pgURL == "" {
		return fmt.Errorf("flag -postgres-url (or FLOE_POSTGRES_URL) is required")
	}
	if err := s3c.Validate(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := postgres.DefaultOptions()
	opts.Logger = sc.Logger
	meta, err := postgres.Open(startCtx, *pgURL, opts)
	if err != nil {
		return fmt.Errorf("metadata store unavailable: %w", err)
	}
	defer meta.Close()
	s3, err := s3store.New(startCtx, s3c)
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	if err := s3.CheckBucket(startCtx); err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	var store objectstore.Store = s3
	if p := strings.Trim(*prefix, "/"); p != "" {
		store = objectstore.WithPrefix(store, p)
	}
	return serve(ctx, sc, meta, store, prometheus.NewRegistry())
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
