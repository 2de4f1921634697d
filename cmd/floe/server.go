package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/console"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/internal/tlsconf"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// serverConfig is what serve needs, whatever the backends.
type serverConfig struct {
	GRPCAddr    string
	MetricsAddr string
	Batcher     batcher.Config
	Agent       agent.Config
	// KafkaAddr is the Kafka listener's address ("": none); Kafka its
	// settings (kafka.go).
	KafkaAddr string
	Kafka     kafka.Config
	Logger    *slog.Logger
	// FailFast ends the start at the first store that does not answer,
	// instead of waiting for it.
	FailFast bool
	// ReadyInterval is the period of the readiness checks of the stores.
	ReadyInterval time.Duration
	// DrainTimeout bounds the flush and commit of what producers handed
	// in, once serving stops (0: 15 s).
	DrainTimeout time.Duration
	// Pprof serves /debug/pprof/ on the metrics listener (pprof.go).
	Pprof bool
	// MemoryRoom is the soft memory limit's room above the buffered
	// bytes and the read cache (memlimit.go; 0: defaultMemoryRoom).
	MemoryRoom int64
	// HTTP bounds the HTTP listener (zero fields: defaultHTTPLimits).
	HTTP httpLimits
	// GRPCTLS, KafkaTLS and HTTPTLS are the listeners' TLS (tls.go; off
	// without files).
	GRPCTLS, KafkaTLS, HTTPTLS tlsconf.Config
	tlsMetrics                 *tlsMetrics // set by serve
	// AddrFile, optional, receives the bound addresses (addrfile.go).
	AddrFile string
	// Ready, optional, is called with the bound addresses once serving.
	Ready func(grpcAddr, metricsAddr string)
	// Background, optional, starts work beside the agent on the same
	// stores once they are open (floe dev's compactor); stop is called
	// before the stores close.
	Background func(ctx context.Context, meta metadata.Store, store objectstore.Store, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error)
	// Tables, optional, opens the reader of offsets below the raw log
	// start from the topics' Iceberg tables (tables.go).
	Tables func(ctx context.Context, log *slog.Logger) (agent.TableReader, func(), error)
	// Handlers, optional, are more handlers of the metrics listener by
	// pattern (floe dev's Iceberg REST catalog).
	Handlers map[string]http.Handler
	// Auth are the auth.* settings (authwire.go).
	Auth AuthSettings
	// auth is their enforcement, set by serve.
	auth *serverAuth
}

// Start-up retries: the first wait, its cap, and the bound of one attempt.
const (
	startBackoff    = 500 * time.Millisecond
	startMaxBackoff = 10 * time.Second
	startAttempt    = 15 * time.Second
)

// openFunc opens an agent's stores, retrying each step through st.
type openFunc func(ctx context.Context, st *starter) (metadata.Store, objectstore.Store, error)

// serve listens and serves at once — /healthz, /readyz and /metrics, and
// gRPC with health NOT_SERVING and floe's services answering Unavailable —
// then opens the stores with open (waiting for them unless sc.FailFast),
// then runs an agent until ctx ends, then drains: stops accepting, flushes
// and commits what producers handed in. ctx ending while the stores are
// awaited is a clean stop.
func serve(ctx context.Context, sc serverConfig, open openFunc, reg *prometheus.Registry) error {
	log := sc.Logger
	lis, err := net.Listen("tcp", sc.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sc.GRPCAddr, err)
	}
	mlis, err := net.Listen("tcp", sc.MetricsAddr)
	if err != nil {
		lis.Close()
		return fmt.Errorf("listen on %s: %w", sc.MetricsAddr, err)
	}
	if err := writeAddrFile(sc.AddrFile, listenAddrs{GRPC: lis.Addr().String(), Metrics: mlis.Addr().String()}); err != nil {
		lis.Close()
		mlis.Close()
		return err
	}
	sc.tlsMetrics = newTLSMetrics(reg)
	grpcTLS, err := serverTLS(sc.GRPCTLS, "grpc", log, sc.tlsMetrics)
	if err == nil {
		mlis, err = listenTLS(mlis, sc.HTTPTLS, "http", log, sc.tlsMetrics)
	}
	if err != nil {
		lis.Close()
		mlis.Close()
		return err
	}
	ready := newReadiness(log, "starting")
	limits := sc.HTTP.withDefaults()
	sa, err := newServerAuth(sc.Auth, reg, log)
	if err != nil {
		lis.Close()
		mlis.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: limits.MaxInFlight}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/readyz", ready)
	mux.Handle("/{$}", http.RedirectHandler("/console/", http.StatusFound))
	if sc.Pprof {
		mountPprof(mux)
	}
	hsrv := newHTTPServer(sa.gate.wrap(mux), limits)
	httpDone := make(chan error, 1)
	go func() {
		err := hsrv.Serve(mlis)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		httpDone <- err
	}()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hsrv.Shutdown(closeCtx)
		<-httpDone
	}()

	// The call metrics, then the drain gate, so that its Unavailable (shutting down) is not
	// rewritten as a store failure; then the agent's options: message limits
	// above its own checks (so that oversize requests are InvalidArgument
	// naming the limit), request ids and error rewriting.
	gate := newDrainGate() // drain.go
	opts := append(newRPCMetrics(reg).options(), gate.options()...)
	opts = append(opts, agent.GRPCServerOptions(sc.Agent, log)...)
	if grpcTLS != nil {
		opts = append(opts, grpc.Creds(grpcTLS.GRPCCredentials()))
	}
	late := &lateAgent{}
	opts = append(opts, sa.grpcOptions(late)...) // authentication and ACLs, after the request ids
	gs := grpc.NewServer(append(opts, grpc.MaxConcurrentStreams(1024))...)
	source := func() console.Source {
		if a := late.ag.Load(); a != nil {
			return a
		}
		return nil // the agent is starting
	}
	cons := console.New(console.Options{Logger: log, Source: source, MaxInFlight: limits.MaxInFlight, Iceberg: func() console.IcebergSource {
		// The tables' names and lag as the agent knows them (the
		// compactor records each table's watermark in the metadata).
		return console.TopicTables(source, iceberg.DefaultNamespace, iceberg.TableName, 500)
	}})
	defer cons.Close()
	mux.Handle("/console/", cons) // the read-only web console (package console)
	for pattern, h := range sc.Handlers {
		mux.Handle(pattern, h)
	}
	late.register(gs)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	ready.attach(hs) // NOT_SERVING until the stores answer
	grpcDone := make(chan error, 1)
	go func() {
		err := gs.Serve(agent.LimitListener(lis, sc.Agent.MaxConnections, nil)) // -grpc-max-connections
		if errors.Is(err, grpc.ErrServerStopped) {
			err = nil
		}
		grpcDone <- err
	}()
	// stopGRPC drains: not ready, new calls refused with Unavailable
	// (shutting down), subscriptions ended with it, GOAWAY sent; then flush
	// (optional) answers the producers waiting; then the calls still in
	// flight get wait to end before the connections close. It returns
	// flush's error and gs.Serve's.
	stopGRPC := func(flush func() error, wait time.Duration) error {
		ready.stop()
		hs.Shutdown()
		gate.start()
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		var ferr error
		if flush != nil {
			ferr = flush()
		}
		select {
		case <-stopped:
		case <-time.After(wait):
			gs.Stop() // ends the produce streams still open: their clients resend elsewhere
			<-stopped
		}
		if ferr != nil {
			return ferr
		}
		if err := <-grpcDone; err != nil {
			return fmt.Errorf("grpc server: %w", err)
		}
		return nil
	}

	st := &starter{log: log, ready: ready, failFast: sc.FailFast, attempt: startAttempt, backoff: startBackoff, maxBackof: startMaxBackoff}
	meta, store, err := open(ctx, st)
	if err != nil {
		gerr := stopGRPC(nil, 5*time.Second)
		if errors.Is(err, errStartCanceled) {
			log.Info("floe agent stopped while waiting for its stores")
			return gerr
		}
		return err
	}
	defer meta.Close()
	if err := sa.open(ctx, meta, log); err != nil {
		return errors.Join(err, stopGRPC(nil, 5*time.Second))
	}
	defer sa.close()
	sc.auth = sa
	return runServing(ctx, sc, meta, store, reg, late, ready, stopGRPC, lis.Addr().String(), mlis.Addr().String())
}

// runServing runs an agent on meta and store, answering through late,
// until ctx ends; then stops gRPC with stopGRPC and drains.
func runServing(ctx context.Context, sc serverConfig, meta metadata.Store, store objectstore.Store, reg *prometheus.Registry,
	late *lateAgent, ready *readiness, stopGRPC func(flush func() error, wait time.Duration) error, grpcAddr, metricsAddr string) error {
	log := sc.Logger
	// A soft memory limit the GC works to keep (memlimit.go).
	if limit, set := softMemoryLimit(os.Getenv("GOMEMLIMIT"), sc.Batcher.MaxBufferedBytes, sc.Agent.CacheBytes, sc.MemoryRoom); set {
		debug.SetMemoryLimit(limit)
		log.Debug("memory limit set", "bytes", limit)
	}
	// go_sched_latencies_seconds too (runnable → running): how long the
	// agent's goroutines wait for a CPU, floe-bench's sign of a busy host.
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: schedLatencies})), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	probe := store // readiness probes stay out of the request metrics
	store = objectstore.WithMetrics(store, reg)

	var ag *agent.Agent
	b, err := batcher.New(sc.Batcher, store, meta, batcher.Options{
		Logger:   log,
		Metrics:  batcher.NewMetrics(reg),
		OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) },
	})
	if err != nil {
		return errors.Join(err, stopGRPC(nil, 5*time.Second))
	}
	var tables agent.TableReader
	if sc.Tables != nil {
		t, closeTables, err := sc.Tables(ctx, log)
		if err != nil {
			_ = b.Close(context.Background())
			return errors.Join(err, stopGRPC(nil, 5*time.Second))
		}
		defer closeTables()
		tables = t
	}
	ag, err = agent.New(sc.Agent, meta, store, b, agent.Options{Logger: log, Registry: reg, Tables: tables})
	if err != nil {
		_ = b.Close(context.Background())
		return errors.Join(err, stopGRPC(nil, 5*time.Second))
	}
	if sc.Background != nil {
		stopBackground, err := sc.Background(ctx, meta, store, reg, log)
		if err != nil {
			_ = b.Close(context.Background())
			return errors.Join(err, stopGRPC(nil, 5*time.Second))
		}
		defer stopBackground()
	}
	stopKafka, kafkaAddr, err := startKafka(sc, ag, grpcAddr, log, reg)
	if err == nil && kafkaAddr != "" {
		err = writeAddrFile(sc.AddrFile, listenAddrs{GRPC: grpcAddr, Metrics: metricsAddr, Kafka: kafkaAddr})
		if err != nil {
			<-stopKafka()
		}
	}
	if err != nil {
		_ = b.Close(context.Background())
		return errors.Join(err, stopGRPC(nil, 5*time.Second))
	}
	late.set(ag)
	log.Info("floe agent serving", "grpc", grpcAddr, "metrics", metricsAddr, "kafka", kafkaAddr)

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	g := new(errgroup.Group)
	g.Go(func() error { return ag.Run(runCtx) })
	g.Go(func() error {
		watchReadiness(runCtx, ready, meta, probe, sc.ReadyInterval)
		return nil
	})
	if sc.Ready != nil {
		sc.Ready(grpcAddr, metricsAddr)
	}

	<-ctx.Done()
	log.Info("floe agent draining")
	drain := sc.DrainTimeout
	if drain <= 0 {
		drain = 15 * time.Second
	}
	// Flush and commit what producers handed in while the calls that
	// carried it wait for their answers; then give them 2 s to send them.
	flush := func() error {
		closeCtx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		return b.Close(closeCtx)
	}
	kafkaDone := stopKafka() // closes Kafka connections; appended produces commit in the flush
	serr := stopGRPC(flush, 2*time.Second)
	kerr := <-kafkaDone
	cancelRun()
	gerr := g.Wait()
	log.Info("floe agent stopped")
	return errors.Join(serr, kerr, gerr)
}
