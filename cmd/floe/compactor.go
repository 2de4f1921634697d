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
)

// runCompactor is `floe compactor`: the retention, deletion and orphan jobs
// against PostgreSQL and S3. Replicas may run side by side; each job is
// held by one of them at a time (a lease in PostgreSQL).
func runCompactor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe compactor", "", `Run the background jobs against PostgreSQL and an S3 bucket, until SIGINT
or SIGTERM: retention (log start offsets), deletion of dead files after a
grace period, collection of orphan objects, merging of small files. Several
replicas may run: each job is held by one at a time through a lease.
/healthz (liveness) answers at once; /readyz (readiness) once PostgreSQL,
the bucket and the Iceberg catalog answer: the start waits for them,
retrying with backoff, one WARN line per attempt.`, 0, 0)
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
	d.Logger = log
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.Registerer = reg

	// Listen at once: /healthz (liveness) answers from the start and
	// /readyz says what the start waits for, so that slow stores leave
	// the compactor alive and not ready rather than crash-looping.
	mlis, err := net.Listen("tcp", conf.Compactor.MetricsListen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", conf.Compactor.MetricsListen, err)
	}
	if err := writeAddrFile(conf.Compactor.AddrFile, listenAddrs{Metrics: mlis.Addr().String()}); err != nil {
		mlis.Close()
		return err
	}
	if mlis, err = listenTLS(mlis, conf.TLS.httpTLS(), "http", log, newTLSMetrics(reg)); err != nil {
		return err
	}
	exportS3CA(conf.S3.CAFile)
	ready := newReadiness(log, "starting")
	sa, err := newServerAuth(conf.Auth, reg, log) // the listener's auth (authwire.go)
	if err != nil {
		mlis.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/readyz", ready)
	rest := &lateHandler{} // the read-only Iceberg REST catalog (icebergrest.go), once the catalog is open
	mux.Handle(icebergRESTPath+"/", rest)
	hsrv := &http.Server{Handler: sa.gate.wrap(mux), ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := hsrv.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serr = fmt.Errorf("metrics server: %w", err)
		}
	}()
	defer func() {
		closeCtx, cancelClose := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelClose()
		_ = hsrv.Shutdown(closeCtx)
		wg.Wait()
	}()
	log.Info("floe compactor listening", "metrics", mlis.Addr().String())

	err = runCompactorOn(ctx, conf, d, ready, reg, rest, sa)
	if errors.Is(err, errStartCanceled) {
		log.Info("floe compactor stopped while waiting for its stores")
		err = nil
	}
	return errors.Join(err, serr)
}

// compactorReadyInterval is the period of the compactor's readiness
// checks of its stores once it runs.
const compactorReadyInterval = 5 * time.Second

// runCompactorOn opens the compactor's stores and catalog, retrying each
// with backoff (not ready meanwhile, one WARN line per attempt), then runs
// the jobs until ctx ends. What waiting cannot fix (refused credentials, a
// missing bucket) ends the start at once.
func runCompactorOn(ctx context.Context, conf Config, d compactor.Config, ready *readiness, reg *prometheus.Registry, rest *lateHandler, sa *serverAuth) error {
	log := d.Logger
	st := &starter{log: log, ready: ready, attempt: startAttempt, backoff: startBackoff, maxBackof: startMaxBackoff}
	opts := postgres.DefaultOptions()
	opts.Logger, opts.MaxConns = log, 4
	s3c := conf.s3Config()
	meta, s3, err := openStores(ctx, st, conf.Postgres.URL, opts, s3c, conf.S3.Prefix)
	if err != nil {
		return err
	}
	defer meta.Close()
	if err := sa.open(ctx, meta, log); err != nil {
		return err
	}
	defer sa.close()
	probe := withPrefix(s3, conf.S3.Prefix) // readiness probes stay out of the request metrics
	store := objectstore.WithMetrics(probe, reg)
	closeIce := func() {}
	err = st.retry(ctx, "iceberg catalog", func(ctx context.Context) error {
		var err error
		closeIce, err = conf.Iceberg.setup(ctx, &d, conf.tablesConfig(), log)
		return err
	})
	if err != nil {
		return err
	}
	defer closeIce()
	if d.Iceberg != nil {
		h, err := icebergREST(d.Iceberg, conf.Iceberg, s3TableConfig(s3c.Endpoint, s3c.Region, s3c.PathStyle), log)
		if err != nil {
			return err
		}
		rest.set(h)
		defer rest.set(nil)
	}
	c, err := compactor.New(meta, store, d)
	if err != nil {
		return err
	}
	ready.set(nil)
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchReadiness(runCtx, ready, meta, probe, compactorReadyInterval)
	}()
	log.Info("floe compactor running", "owner", d.Owner, "interval", d.Interval, "grace", d.Grace)
	err = c.Run(ctx)
	ready.stop()
	cancelRun()
	<-watched
	log.Info("floe compactor stopped")
	return err
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
			h, err := icebergREST(cfg.Iceberg, ice, nil, log)
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
