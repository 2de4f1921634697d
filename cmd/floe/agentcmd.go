package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
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
	maxRecordBytes        int
	maxRequestBytes       int
	maxFetchBytes         int
	commitTimeout         time.Duration
	uploadTimeout         time.Duration
	maxFetchRecords       int
	maxLoadingBytes       int64
	replayBytesPerSecond  int64
	replayMinLagRecords   int64
	failFast              bool
	readyInterval         time.Duration
}

func (c *commonServerFlags) register(fs *flag.FlagSet, listen, metrics string) {
	bd := batcher.DefaultConfig()
	ad := agent.DefaultConfig()
	fs.StringVar(&c.listen, "listen", listen, "gRPC listen address")
	fs.StringVar(&c.metricsListen, "metrics-listen", metrics, "HTTP address of /metrics, /healthz (liveness) and /readyz (readiness)")
	fs.DurationVar(&c.linger, "linger", bd.Linger, "how long a file waits for more batches before it is flushed")
	fs.IntVar(&c.maxFileBytes, "max-file-bytes", bd.MaxFileBytes, "flush a file once it reaches this size")
	fs.Int64Var(&c.maxBufferedBytes, "max-buffered-bytes", bd.MaxBufferedBytes, "bytes accepted but not yet acknowledged before producers wait")
	fs.Int64Var(&c.cacheBytes, "cache-bytes", ad.CacheBytes, "read cache size")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&c.maxRecordBytes, "max-record-bytes", ad.MaxRecordBytes, "largest record (key + value + headers) accepted")
	fs.IntVar(&c.maxRequestBytes, "max-request-bytes", 0, "largest produce request accepted (0: "+fmt.Sprint(ad.MaxRequestBytes)+", at most half of -max-file-bytes)")
	fs.IntVar(&c.maxFetchBytes, "max-fetch-bytes", ad.MaxFetchBytes, "largest fetch or subscribe answer")
	fs.DurationVar(&c.commitTimeout, "commit-timeout", bd.CommitTimeout, "bound of one file's metadata commit, retries included; past it its producers hear failed or outcome unknown")
	fs.DurationVar(&c.uploadTimeout, "upload-timeout", bd.UploadTimeout, "bound of one file's upload, all attempts included; past it its producers fail (retry safely)")
	fs.IntVar(&c.maxFetchRecords, "max-fetch-records", ad.MaxFetchRecords, "most records in one fetch or subscribe answer")
	fs.Int64Var(&c.maxLoadingBytes, "max-loading-bytes", ad.MaxLoadingBytes, "bytes read from the object store at once across all readers; past it readers wait, then get ResourceExhausted")
	fs.Int64Var(&c.replayBytesPerSecond, "replay-bytes-per-second", ad.ReplayBytesPerSecond, "read budget of one consumer group replaying far behind the head, per agent (0: unlimited)")
	fs.Int64Var(&c.replayMinLagRecords, "replay-min-lag-records", ad.ReplayMinLagRecords, "a group reader at least this many records behind the head reads through the replay budget")
	fs.DurationVar(&c.readyInterval, "ready-interval", 2*time.Second, "period of the readiness checks of the stores (/readyz, gRPC health)")
}

func (c *commonServerFlags) config(stderr io.Writer) (serverConfig, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return serverConfig{}, fmt.Errorf("flag -log-level: %q is not a level", c.logLevel)
	}
	if c.readyInterval <= 0 {
		return serverConfig{}, fmt.Errorf("flag -ready-interval: %v must be positive", c.readyInterval)
	}
	sc := serverConfig{
		GRPCAddr: c.listen, MetricsAddr: c.metricsListen,
		FailFast: c.failFast, ReadyInterval: c.readyInterval,
		Batcher: batcher.DefaultConfig(), Agent: agent.DefaultConfig(),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})),
	}
	sc.Batcher.Linger = c.linger
	sc.Batcher.MaxFileBytes = c.maxFileBytes
	sc.Batcher.MaxBufferedBytes = c.maxBufferedBytes
	sc.Batcher.CommitTimeout = c.commitTimeout
	sc.Batcher.UploadTimeout = c.uploadTimeout
	sc.Agent.MaxFetchRecords = c.maxFetchRecords
	sc.Agent.MaxLoadingBytes = c.maxLoadingBytes
	sc.Agent.ReplayBytesPerSecond = c.replayBytesPerSecond
	sc.Agent.ReplayMinLagRecords = c.replayMinLagRecords
	sc.Agent.ReplayBurstBytes = max(sc.Agent.ReplayBurstBytes, int64(sc.Agent.MaxFetchBytes))
	sc.Agent.CacheBytes = c.cacheBytes
	sc.Agent.MaxRecordBytes = c.maxRecordBytes
	sc.Agent.MaxFetchBytes = c.maxFetchBytes
	if c.maxRequestBytes != 0 {
		sc.Agent.MaxRequestBytes = c.maxRequestBytes
	} else if sc.Agent.MaxRequestBytes > c.maxFileBytes/2 {
		sc.Agent.MaxRequestBytes = max(c.maxFileBytes/2, sc.Agent.MaxRecordBytes)
	}
	return sc, nil
}

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe agent", "", `Run an agent against PostgreSQL and an S3 bucket, until SIGINT or SIGTERM.
At start it waits for PostgreSQL and the object store (not ready, retrying
with backoff, one WARN line per attempt) unless -fail-fast is given.
/healthz is liveness, /readyz readiness (both stores answer).`, 0, 0)
	fs := cmd.fs
	var c commonServerFlags
	c.register(fs, ":7070", ":7071")
	fs.BoolVar(&c.failFast, "fail-fast", false, "exit if a store does not answer at start (default: wait for it, retrying with backoff)")
	pgURL := fs.String("postgres-url", os.Getenv("FLOE_POSTGRES_URL"), "PostgreSQL URL (env FLOE_POSTGRES_URL)")
	s3c := s3store.DefaultConfig()
	prefix := fs.String("s3-prefix", os.Getenv("FLOE_S3_PREFIX"), "key prefix inside the bucket (env FLOE_S3_PREFIX)")
	fs.StringVar(&s3c.Bucket, "s3-bucket", os.Getenv("FLOE_S3_BUCKET"), "S3 bucket (env FLOE_S3_BUCKET)")
	fs.StringVar(&s3c.Endpoint, "s3-endpoint", os.Getenv("FLOE_S3_ENDPOINT"), "S3 endpoint URL for S3-compatible stores (env FLOE_S3_ENDPOINT)")
	fs.StringVar(&s3c.Region, "s3-region", envOr("AWS_REGION", s3c.Region), "S3 region (env AWS_REGION)")
	fs.StringVar(&s3c.AccessKey, "s3-access-key", "", "S3 access key (default: the AWS credential chain, e.g. AWS_ACCESS_KEY_ID)")
	fs.StringVar(&s3c.SecretKey, "s3-secret-key", "", "S3 secret key (default: the AWS credential chain, e.g. AWS_SECRET_ACCESS_KEY)")
	fs.BoolVar(&s3c.PathStyle, "s3-path-style", os.Getenv("FLOE_S3_PATH_STYLE") == "true", "path-style addressing (most S3-compatible servers)")
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
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
	opts := postgres.DefaultOptions()
	opts.Logger = sc.Logger
	open := func(ctx context.Context, st *starter) (metadata.Store, objectstore.Store, error) {
		var meta *postgres.Store
		err := st.retry(ctx, "metadata store", func(ctx context.Context) error {
			var err error
			if meta, err = postgres.Open(ctx, *pgURL, opts); err != nil {
				err = fmt.Errorf("metadata store unavailable: %w", err)
				if !pgTransient(err) {
					return &permanentError{err}
				}
			}
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		var s3 *s3store.Store
		err = st.retry(ctx, "object store", func(ctx context.Context) error {
			var err error
			if s3, err = s3store.New(ctx, s3c); err != nil {
				return &permanentError{fmt.Errorf("object store: %w", err)}
			}
			if err := s3.CheckBucket(ctx); err != nil {
				if objectstore.IsPermanent(err) {
					return &permanentError{fmt.Errorf("object store: %w", err)}
				}
				return fmt.Errorf("object store: %w", err)
			}
			return nil
		})
		if err != nil {
			meta.Close()
			return nil, nil, err
		}
		var store objectstore.Store = s3
		if p := strings.Trim(*prefix, "/"); p != "" {
			store = objectstore.WithPrefix(store, p)
		}
		return meta, store, nil
	}
	return serve(ctx, sc, open, prometheus.NewRegistry())
}

// pgTransient reports whether a failure to open PostgreSQL may pass by
// waiting: the server is unreachable, starting, shutting down or out of
// connections. Refused credentials, a missing database or a refused schema
// are not.
func pgTransient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58", "40": // connection, resources, operator intervention, system, rollback
			return true
		}
		return false
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
