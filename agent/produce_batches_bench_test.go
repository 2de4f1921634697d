package agent_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchAgent runs an agent on SQLite and an in-memory store for a
// benchmark, stopped when it ends.
func benchAgent(b *testing.B) *agent.Agent {
	ctx, cancel := context.WithCancel(context.Background())
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	var ag *agent.Agent
	bt, err := batcher.New(bcfg, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		b.Fatal(err)
	}
	if ag, err = agent.New(acfg, meta, store, bt, agent.Options{}); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	b.Cleanup(func() {
		_ = bt.Close(context.Background())
		cancel()
		wg.Wait()
		meta.Close()
	})
	return ag
}

// BenchmarkProduceCPU measures the agent's CPU per MiB of records produced
// through the per-record API (Produce) and the batch API (ProduceBatches),
// in the same run: each request, 256 records of 1 KiB bound for one of 16
// partitions, is decoded from its wire bytes (the server's proto decode)
// and handed to the agent's handler, which validates, appends, and waits
// for the commit (batcher, in-memory object store, SQLite). The client's
// encoding is done once, outside the measure. Metrics: records-ms/MiB and
// batches-ms/MiB of process CPU, and their ratio batches/records.
func BenchmarkProduceCPU(b *testing.B) {
	ctx := context.Background()
	ag := benchAgent(b)
	var err error
	const parts, perReq = 16, 256
	if _, err := ag.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: "bench", Partitions: parts}); err != nil {
		b.Fatal(err)
	}
	recs := make([]*floev1.Record, perReq)
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
	recWire := make([][]byte, parts)
	batchWire := make([][]byte, parts)
	for p := range int32(parts) {
		if recWire[p], err = proto.Marshal(&floev1.ProduceRequest{Topic: "bench", Partition: &p, Records: recs}); err != nil {
			b.Fatal(err)
		}
		if batchWire[p], err = proto.Marshal(&floev1.ProduceBatchesRequest{Topic: "bench",
			Partitions: []*floev1.PartitionBatches{{Partition: p, Batches: batch}}}); err != nil {
			b.Fatal(err)
		}
	}
	// run sends n requests from one goroutine per partition and returns
	// the CPU they took.
	run := func(n int, batches bool) time.Duration {
		start := cpuTime(b)
		var g sync.WaitGroup
		for p := range parts {
			g.Add(1)
			go func() {
				defer g.Done()
				for i := p; i < n; i += parts {
					var err error
					if batches {
						req := new(floev1.ProduceBatchesRequest)
						if err = proto.Unmarshal(batchWire[p], req); err == nil {
							_, err = ag.ProduceBatches(ctx, req)
						}
					} else {
						req := new(floev1.ProduceRequest)
						if err = proto.Unmarshal(recWire[p], req); err == nil {
							_, err = ag.Produce(ctx, req)
						}
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		g.Wait()
		return cpuTime(b) - start
	}
	run(2*parts, false) // warm up both paths
	run(2*parts, true)
	var recCPU, batchCPU time.Duration
	for b.Loop() {
		recCPU += run(parts, false)
		batchCPU += run(parts, true)
	}
	mib := float64(b.N*parts*perReq) * (1 << 10) / (1 << 20)
	b.SetBytes(int64(2 * parts * perReq << 10))
	b.ReportMetric(float64(recCPU.Microseconds())/1000/mib, "records-ms/MiB")
	b.ReportMetric(float64(batchCPU.Microseconds())/1000/mib, "batches-ms/MiB")
	b.ReportMetric(float64(batchCPU)/float64(recCPU), "batches/records")
}

// BenchmarkFetchCPU measures the agent's CPU per MiB of records fetched
// per record and in batches mode, in the same run: 16 MiB of 1 KiB
// records in one partition, in the read cache, read from offset 0 in
// 1 MiB fetches, each answer encoded for the wire (proto.Marshal, the
// server's part). Metrics: records-ms/MiB, batches-ms/MiB and their ratio.
func BenchmarkFetchCPU(b *testing.B) {
	ctx := context.Background()
	ag := benchAgent(b)
	if _, err := ag.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: "bench", Partitions: 1}); err != nil {
		b.Fatal(err)
	}
	const perReq, reqs = 256, 64
	recs := make([]*floev1.Record, perReq)
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
	for range reqs {
		if _, err := ag.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "bench",
			Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: batch}}}); err != nil {
			b.Fatal(err)
		}
	}
	const total = perReq * reqs
	readAll := func(batches bool) time.Duration {
		start := cpuTime(b)
		for off := int64(0); off < total; {
			resp, err := ag.Fetch(ctx, &floev1.FetchRequest{Topic: "bench", Offset: off, MaxBytes: 1 << 20, Batches: batches})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := proto.Marshal(resp); err != nil {
				b.Fatal(err)
			}
			off = resp.GetNextOffset()
		}
		return cpuTime(b) - start
	}
	readAll(false)
	readAll(true)
	var recCPU, batchCPU time.Duration
	for b.Loop() {
		recCPU += readAll(false)
		batchCPU += readAll(true)
	}
	mib := float64(b.N*total) * (1 << 10) / (1 << 20)
	b.SetBytes(int64(2 * total << 10))
	b.ReportMetric(float64(recCPU.Microseconds())/1000/mib, "records-ms/MiB")
	b.ReportMetric(float64(batchCPU.Microseconds())/1000/mib, "batches-ms/MiB")
	b.ReportMetric(float64(batchCPU)/float64(recCPU), "batches/records")
}
