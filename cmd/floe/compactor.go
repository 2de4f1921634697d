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
	cf := registerConfig(cmd.fs, "compactor")
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
	}
	conf, err := cf.load(cmd.fs, os.Getenv)
	if err != nil {
		return err
	}
	log := conf.logger(stderr)
	d := compactorConfig(conf.Compactor)
	s3c := conf.s3Config()
	d.Logger = log
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.Registerer = reg

	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := postgres.DefaultOptions()
	opts.Logger, opts.MaxConns = log, 4
	meta, err := postgres.Open(startCtx, conf.Postgres.URL, opts)
	if err != nil {
		return fmt.Errorf("metadata store unavailable: %w", err)
	}
	defer meta.Close()
	s3, err := s3store.New(startCtx, s3c)
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	if err := probeBucket(startCtx, s3, conf.S3.Prefix); err != nil {
		return err
	}
	store := objectstore.WithMetrics(withPrefix(s3, conf.S3.Prefix), reg)
	closeIce, err := conf.Iceberg.setup(startCtx, &d, conf.Iceberg.postgresConfig(conf.Postgres.URL, s3c, conf.S3.Prefix), log)
	if err != nil {
		return err
	}
	defer closeIce()
	c, err := compactor.New(meta, store, d)
	if err != nil {
		return err
	}
	mlis, err := net.Listen("tcp", conf.Compactor.MetricsListen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", conf.Compactor.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	if d.Iceberg != nil { // the read-only Iceberg REST catalog (icebergrest.go)
		h, err := icebergREST(d.Iceberg, s3TableConfig(s3c.Endpoint, s3c.Region, s3c.PathStyle), log)
		if err != nil {
			return err
		}
		mux.Handle(icebergRESTPath+"/", h)
	}
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

// compactorConfig is the compactor's configuration of the settings.
func compactorConfig(cs CompactorSettings) compactor.Config {
	d := compactor.DefaultConfig()
	d.Owner = cs.Owner
	if d.Owner == "" {
		d.Owner = compactor.DefaultOwner()
	}
	d.Interval, d.LeaseTTL, d.Grace, d.OrphanAge = cs.Interval, cs.LeaseTTL, cs.Grace, cs.OrphanAge
	d.MergeSmallBytes, d.MergeTargetBytes, d.MergeMinAge = cs.MergeSmallBytes, cs.MergeTargetBytes, cs.MergeMinAge
	d.CompactMaxBytes, d.CompactMinAge = cs.CompactMaxBytes, cs.CompactMinAge
	return d
}

// devCompactor runs the compactor inside `floe dev` until ctx ends or the
// returned stop is called (which waits for it).
func devCompactor(cs CompactorSettings, ice IcebergSettings, dataDir string, rest *lateHandler) func(ctx context.Context, meta metadata.Store, store objectstore.Store, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
	return func(ctx context.Context, meta metadata.Store, store objectstore.Store, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
		cfg := compactorConfig(cs)
		cfg.Logger, cfg.Registerer = log, reg
		closeIce, err := ice.devSetup(ctx, &cfg, dataDir, log)
		if err != nil {
			return nil, err
		}
		c, err := compactor.New(meta, store, cfg)
		if err != nil {
			closeIce()
			return nil, err
		}
		if cfg.Iceberg != nil { // the read-only Iceberg REST catalog (icebergrest.go)
			h, err := icebergREST(cfg.Iceberg, nil, log)
			if err != nil {
				closeIce()
				return nil, err
			}
			rest.set(h)
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer closeIce()
			defer rest.set(nil)
			_ = c.Run(ctx)
		}()
		return func() { cancel(); <-done }, nil
	}
}
