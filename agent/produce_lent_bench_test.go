package agent_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// copyingProducer is the batcher without AppendParsedLent: the agent then
// receives produce requests through protobuf, which copies every batch
// out of the receive buffer (the path before lending).
type copyingProducer struct{ b *batcher.Batcher }

func (p copyingProducer) Append(ctx context.Context, topicID int64, partition int32, batch []byte) (*batcher.Pending, error) {
	return p.b.Append(ctx, topicID, partition, batch)
}

func (p copyingProducer) AppendParsed(ctx context.Context, topicID int64, partition int32, batch []byte, info kbatch.Info) (*batcher.Pending, error) {
	return p.b.AppendParsed(ctx, topicID, partition, batch, info)
}

// streamBenchNode is an agent behind the agent's gRPC options on a
// loopback pipe (SQLite, in-memory store), lending receive buffers or not.
func streamBenchNode(b *testing.B, lend bool) *client.Client {
	ctx, cancel := context.WithCancel(context.Background())
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 20 * time.Millisecond
	var ag *agent.Agent
	bt, err := batcher.New(bcfg, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		b.Fatal(err)
	}
	var prod agent.Producer = bt
	if !lend {
		prod = copyingProducer{bt}
	}
	if ag, err = agent.New(acfg, meta, store, prod, agent.Options{}); err != nil {
		b.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(agent.GRPCServerOptions(acfg, nil)...)
	ag.Register(gs)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = gs.Serve(lis) }()
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	c, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		gs.Stop()
		_ = bt.Close(context.Background())
		cancel()
		wg.Wait()
		meta.Close()
	})
	return c
}

// BenchmarkProduceStreamCPU measures the process's CPU per MiB produced
// over ProduceBatchesStream through the agent's gRPC options, with the
// receive buffer lent to the batcher (lent-ms/MiB) and copied out by
// protobuf (copied-ms/MiB), in the same run, alternating. Each request
// carries one batch for each of 16 partitions of -per records of 1 KiB;
// the client's encoding is in both figures alike. Sizes: 16 records per
// batch (a 250 ms linger's requests) and 1 (a 20 ms linger's).
func BenchmarkProduceStreamCPU(b *testing.B) {
	for _, per := range []int{16, 1} {
		b.Run(fmt.Sprintf("per=%d", per), func(b *testing.B) { benchProduceStream(b, per) })
	}
}

func benchProduceStream(b *testing.B, per int) {
	ctx := context.Background()
	const parts, reqs = 16, 256
	type side struct {
		c   *client.Client
		cpu time.Duration
	}
	sides := []*side{{c: streamBenchNode(b, true)}, {c: streamBenchNode(b, false)}}
	recs := make([]*floev1.Record, per)
	for i := range recs {
		v := make([]byte, 1<<10)
		for j := range v {
			v[j] = byte(i*31 + j*7)
		}
		recs[i] = &floev1.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: v, TimestampMs: 1700000000000 + int64(i)}
	}
	batch, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_NONE, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := &floev1.ProduceBatchesRequest{Topic: "bench"}
	for p := range int32(parts) {
		req.Partitions = append(req.Partitions, &floev1.PartitionBatches{Partition: p, Batches: batch})
	}
	run := func(s *side) {
		start := cpuTime(b)
		st, err := s.c.Log.ProduceBatchesStream(ctx)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		slots := make(chan struct{}, 32)
		go func() {
			for range reqs {
				r, err := st.Recv()
				if err == nil && r.GetErrorCode() != 0 {
					err = fmt.Errorf("produce: %s", r.GetErrorMessage())
				}
				if err != nil {
					done <- err
					return
				}
				<-slots
			}
			done <- nil
		}()
		for i := range reqs {
			slots <- struct{}{}
			if err := st.Send(&floev1.ProduceBatchesStreamRequest{RequestId: uint64(i), Request: req}); err != nil {
				b.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		_ = st.CloseSend()
		s.cpu += cpuTime(b) - start
	}
	for _, s := range sides {
		if _, err := s.c.CreateTopic(ctx, "bench", parts, nil); err != nil {
			b.Fatal(err)
		}
		run(s) // warm up
		s.cpu = 0
	}
	for b.Loop() {
		for _, s := range sides {
			run(s)
		}
	}
	mib := float64(b.N*reqs*parts*per) * (1 << 10) / (1 << 20)
	b.SetBytes(int64(2 * reqs * parts * per << 10))
	b.ReportMetric(float64(sides[0].cpu.Microseconds())/1000/mib, "lent-ms/MiB")
	b.ReportMetric(float64(sides[1].cpu.Microseconds())/1000/mib, "copied-ms/MiB")
	b.ReportMetric(float64(sides[0].cpu)/float64(sides[1].cpu), "lent/copied")
}
