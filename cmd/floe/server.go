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
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// serverConfig is what serve needs, whatever the backends.
type serverConfig struct {
	GRPCAddr    string
	MetricsAddr string
	Batcher     batcher.Config
	Agent       agent.Config
	Logger      *slog.Logger
	// Ready, optional, is called with the bound addresses once serving.
	Ready func(grpcAddr, metricsAddr string)
}

// serve runs an agent on meta and store until ctx ends, then drains:
// stops accepting, flushes and commits what producers handed in.
func serve(ctx context.Context, sc serverConfig, meta metadata.Store, store objectstore.Store, reg *prometheus.Registry) error {
	log := sc.Logger
	// A soft memory limit the GC works to keep: what the agent may hold by
	// configuration (unacknowledged bytes, read cache) plus room for
	// requests in flight and the runtime. GOMEMLIMIT overrides it.
	if os.Getenv("GOMEMLIMIT") == "" {
		limit := sc.Batcher.MaxBufferedBytes + sc.Agent.CacheBytes + 192<<20
		debug.SetMemoryLimit(limit)
		log.Debug("memory limit set", "bytes", limit)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	store = objectstore.WithMetrics(store, reg)

	var ag *agent.Agent
	b, err := batcher.New(sc.Batcher, store, meta, batcher.Options{
		Logger:   log,
		Metrics:  batcher.NewMetrics(reg),
		OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) },
	})
	if err != nil {
		return err
	}
	ag, err = agent.New(sc.Agent, meta, store, b, agent.Options{Logger: log, Registry: reg})
	if err != nil {
		_ = b.Close(context.Background())
		return err
	}

	lis, err := net.Listen("tcp", sc.GRPCAddr)
	if err != nil {
		_ = b.Close(context.Background())
		return fmt.Errorf("listen on %s: %w", sc.GRPCAddr, err)
	}
	mlis, err := net.Listen("tcp", sc.MetricsAddr)
	if err != nil {
		lis.Close()
		_ = b.Close(context.Background())
		return fmt.Errorf("listen on %s: %w", sc.MetricsAddr, err)
	}

	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(sc.Agent.MaxRequestBytes+(1<<20)),
		grpc.MaxSendMsgSize(sc.Agent.MaxFetchBytes+(4<<20)),
		grpc.MaxConcurrentStreams(1024),
	)
	ag.Register(gs)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	hsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	g := new(errgroup.Group)
	g.Go(func() error { return ag.Run(runCtx) })
	g.Go(func() error {
		if err := gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("grpc server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := hsrv.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("metrics server: %w", err)
		}
		return nil
	})
	log.Info("floe agent serving", "grpc", lis.Addr().String(), "metrics", mlis.Addr().String())
	if sc.Ready != nil {
		sc.Ready(lis.Addr().String(), mlis.Addr().String())
	}

	<-ctx.Done()
	log.Info("floe agent stopping")
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		gs.Stop()
		<-stopped
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	berr := b.Close(closeCtx)
	_ = hsrv.Shutdown(closeCtx)
	cancelRun()
	gerr := g.Wait()
	return errors.Join(berr, gerr)
}
