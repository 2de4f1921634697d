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
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// BenchmarkAgentProduce drives an in-process agent (local directory,
// SQLite, loopback gRPC) closed-loop with the harness's floe producers:
// run it with -cpuprofile to see where an agent's CPU goes per MiB.
//
//	go test -run '^$' -bench AgentProduce -benchtime 200000x -cpuprofile cpu.out ./bench
func BenchmarkAgentProduce(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	store, err := objectstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		b.Fatal(err)
	}
	meta, err := sqlite.Open(ctx, filepath.Join(dir, "metadata.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer meta.Close()
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	var ag *agent.Agent
	bt, err := batcher.New(batcher.DefaultConfig(), objectstore.WithMetrics(store, reg), meta, batcher.Options{
		Logger: log, Metrics: batcher.NewMetrics(reg), OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		b.Fatal(err)
	}
	ag, err = agent.New(agent.DefaultConfig(), meta, store, bt, agent.Options{Logger: log, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(8 << 20))
	ag.Register(gs)
	runDone := make(chan error, 1)
	go func() { runDone <- ag.Run(ctx) }()
	go func() { _ = gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		_ = bt.Close(context.Background())
		cancel()
		<-runDone
	}()

	const recordSize = 1024
	sys, err := NewFloeSystem(FloeConfig{Addrs: []string{lis.Addr().String()}, RecordSize: recordSize, MaxInFlight: 48})
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Close()
	rc := DefaultRunConfig()
	rc.Workload, rc.Topic, rc.Producers, rc.BacklogBytes = WorkloadCatchup, "bench-agent", 4, int64(b.N)*recordSize
	if err := sys.Setup(ctx, rc.Topic, rc.Partitions); err != nil {
		b.Fatal(err)
	}
	ps, closeAll, err := openProducers(ctx, sys, rc.Producers)
	if err != nil {
		b.Fatal(err)
	}
	defer closeAll()
	b.SetBytes(recordSize)
	b.ResetTimer()
	start := time.Now()
	per := max(int64(b.N)/int64(len(ps)), 1)
	errs := make(chan error, len(ps))
	for i, p := range ps {
		go func() {
			res, err := Generate(ctx, GenConfig{Producer: i, Schedule: Schedule{Start: start}, MeasureFrom: start,
				MeasureTo: start.Add(time.Hour), StopAfter: per, Drain: time.Minute, MaxBatch: rc.MaxBatch, Tick: 5 * time.Millisecond},
				p, NewHistogram(), nil)
			if err == nil && res.Acked != per {
				err = res.FirstError
			}
			errs <- err
		}()
	}
	for range ps {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}
