package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// runCompactor is `floe compactor`: the retention, deletion and orphan jobs
// against PostgreSQL and S3. Replicas may run side by side; each job is
// held by one of them at a time (a lease in PostgreSQL).
func runCompactor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe compactor", "", `Run the background jobs against PostgreSQL and an S3 bucket, until SIGINT
or SIGTERM: retention (log start offsets), deletion of dead files after a
grace period, collection of orphan objects, merging of small files. Several
replicas may run: each job is held by one at a time through a lease.`, 0, 0)
	fs := cmd.fs
	d := compactor.DefaultConfig()
	metricsListen := fs.String("metrics-listen", ":7072", "HTTP address of /metrics and /healthz")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	pgURL := fs.String("postgres-url", os.Getenv("FLOE_POSTGRES_URL"), "PostgreSQL URL (env FLOE_POSTGRES_URL)")
	s3c := s3store.DefaultConfig()
	prefix := fs.String("s3-prefix", os.Getenv("FLOE_S3_PREFIX"), "key prefix inside the bucket, as the agents' (env FLOE_S3_PREFIX)")
	fs.StringVar(&s3c.Bucket, "s3-bucket", os.Getenv("FLOE_S3_BUCKET"), "S3 bucket (env FLOE_S3_BUCKET)")
	fs.StringVar(&s3c.Endpoint, "s3-endpoint", os.Getenv("FLOE_S3_ENDPOINT"), "S3 endpoint URL for S3-compatible stores (env FLOE_S3_ENDPOINT)")
	fs.StringVar(&s3c.Region, "s3-region", envOr("AWS_REGION", s3c.Region), "S3 region (env AWS_REGION)")
	fs.StringVar(&s3c.AccessKey, "s3-access-key", "", "S3 access key (default: the AWS credential chain, e.g. AWS_ACCESS_KEY_ID)")
	fs.StringVar(&s3c.SecretKey, "s3-secret-key", "", "S3 secret key (default: the AWS credential chain, e.g. AWS_SECRET_ACCESS_KEY)")
	fs.BoolVar(&s3c.PathStyle, "s3-path-style", os.Getenv("FLOE_S3_PATH_STYLE") == "true", "path-style addressing (most S3-compatible servers)")
	owner := fs.String("owner", compactor.DefaultOwner(), "this replica's name in the job leases")
	fs.DurationVar(&d.Interval, "interval", d.Interval, "time between passes")
	fs.DurationVar(&d.LeaseTTL, "lease-ttl", d.LeaseTTL, "how long a job's lease lasts without renewal")
	fs.DurationVar(&d.Grace, "grace", d.Grace, "how long a dead file stays after it was marked (reads in flight; more than the agents' commit timeout and index poll interval)")
	fs.DurationVar(&d.OrphanAge, "orphan-age", d.OrphanAge, "age after which an object the metadata does not know is deleted (grace + the agents' upload + commit timeouts)")
	fs.Int64Var(&d.MergeSmallBytes, "merge-small-bytes", d.MergeSmallBytes, "merge files smaller than this (0: no merging)")
	fs.Int64Var(&d.MergeTargetBytes, "merge-target-bytes", d.MergeTargetBytes, "bytes of live batches one merge writes at most")
	fs.DurationVar(&d.MergeMinAge, "merge-min-age", d.MergeMinAge, "merge only files older than this")
	fs.Int64Var(&d.CompactMaxBytes, "compact-max-bytes", d.CompactMaxBytes, "bytes of a partition one keyed compaction reads at most (0: no keyed compaction)")
	fs.DurationVar(&d.CompactMinAge, "compact-min-age", d.CompactMinAge, "compact by key only batches older than this (and than the topic's min.compaction.lag.ms)")
	ice := addIcebergFlags(fs)
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("flag -log-level: %q is not a level", *logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	if *pgURL == "" {
		return fmt.Errorf("flag -postgres-url (or FLOE_POSTGRES_URL) is required")
	}
	if err := s3c.Validate(); err != nil {
		return err
	}
	d.Owner, d.Logger = *owner, log
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.Registerer = reg

	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := postgres.DefaultOptions()
	opts.Logger, opts.MaxConns = log, 4
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
	store = objectstore.WithMetrics(store, reg)
	closeIce, err := ice.setup(startCtx, &d, ice.postgresConfig(*pgURL, s3c, *prefix), log)
	if err != nil {
		return err
	}
	defer closeIce()
	c, err := compactor.New(meta, store, d)
	if err != nil {
		return err
	}
	mlis, err := net.Listen("tcp", *metricsListen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *metricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	hsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := hsrv.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serr = fmt.Errorf("metrics server: %w", err)
		}
	}()
	log.Info("floe compactor running", "owner", d.Owner, "metrics", mlis.Addr().String(), "interval", d.Interval, "grace", d.Grace)
	err = c.Run(ctx)
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelClose()
	_ = hsrv.Shutdown(closeCtx)
	wg.Wait()
	log.Info("floe compactor stopped")
	return errors.Join(err, serr)
}

// startDevCompactor runs the compactor inside `floe dev` until ctx ends or
// the returned stop is called (which waits for it).
func startDevCompactor(ctx context.Context, meta metadata.Store, store objectstore.Store, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
	cfg := compactor.DefaultConfig()
	cfg.Owner, cfg.Logger, cfg.Registerer = compactor.DefaultOwner(), log, reg
	c, err := compactor.New(meta, store, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}
