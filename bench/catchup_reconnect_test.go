package bench

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// TestCatchupReadAfterRestart: the agent's gRPC server restarts between
// the catch-up's write and read (RunConfig.BeforeRead, as -start does to
// read from a cold cache), and the harness's connection tried the agent
// while it was down (its reconnect backoff is running when the read
// begins). The read still gets every record: FloeSystem.Reconnect waits
// for the connection instead of the consumers failing with Unavailable.
func TestCatchupReadAfterRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	store, err := objectstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := sqlite.Open(ctx, filepath.Join(dir, "metadata.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	var ag *agent.Agent
	bcfg := batcher.DefaultConfig()
	bcfg.Linger = 20 * time.Millisecond
	bt, err := batcher.New(bcfg, store, meta, batcher.Options{Logger: log, Metrics: batcher.NewMetrics(reg),
		OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		t.Fatal(err)
	}
	ag, err = agent.New(agent.DefaultConfig(), meta, store, bt, agent.Options{Logger: log, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- ag.Run(runCtx) }()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	serve := func(lis net.Listener) *grpc.Server {
		gs := grpc.NewServer(agent.GRPCServerOptions(agent.DefaultConfig(), log)...)
		ag.Register(gs)
		go func() { _ = gs.Serve(lis) }()
		return gs
	}
	gs := serve(lis)
	defer func() {
		gs.Stop()
		_ = bt.Close(context.Background())
		stopRun()
		<-runDone
	}()

	const recordSize = 256
	sys, err := NewFloeSystem(FloeConfig{Addrs: []string{addr}, RecordSize: recordSize, MaxInFlight: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	rc := DefaultRunConfig()
	rc.Workload, rc.Topic, rc.Partitions, rc.Producers, rc.Consumers = WorkloadCatchup, "restart", 4, 2, 2
	rc.BacklogBytes, rc.Drain = 1<<20, 5*time.Second
	rc.BeforeRead = func(ctx context.Context) error {
		gs.Stop()
		// A call while the agent is down: the connection fails and backs off.
		if _, err := sys.clients[0].Topics.ListTopics(ctx, &floev1.ListTopicsRequest{}); err == nil {
			t.Error("ListTopics answered while the server was stopped")
		}
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		gs = serve(lis)
		// Within the backoff a call fails fast, though the agent is back.
		_, err = sys.clients[0].Topics.ListTopics(ctx, &floev1.ListTopicsRequest{})
		t.Logf("a call right after the restart: %v", err)
		return nil
	}
	res, err := Run(ctx, sys, rc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Catchup == nil || res.Catchup.ReadRecords != res.Acked || res.FirstError != "" {
		t.Fatalf("catch-up read after the restart: %+v, first error %q", res.Catchup, res.FirstError)
	}
}
