package batcher_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// processCPU is this process's CPU time so far (user + system).
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawLimits measures, on e's stores, n raw PUTs of size bytes and n raw
// one-run commits, one at a time, and returns their p99.
func rawLimits(b *testing.B, e *realEnv, topic metadata.Topic, size, n int) (put, commit time.Duration) {
	ctx := context.Background()
	buf := make([]byte, size)
	var puts, commits []time.Duration
	for i := range n {
		key := fmt.Sprintf("raw/%d/%d", size, i)
		start := time.Now()
		if err := e.s3.Put(ctx, key, buf, objectstore.PutOptions{IfAbsent: true}); err != nil {
			b.Fatal(err)
		}
		puts = append(puts, time.Since(start))
		start = time.Now()
		if _, err := e.meta.CommitFile(ctx, metadata.FileCommit{Key: key, Size: int64(size), Batches: []metadata.BatchCommit{{
			TopicID: topic.ID, Partition: 0, ByteOffset: 0, ByteLength: 100, RecordCount: 1,
			ProducerID: -1, BaseSequence: metadata.NoSequence}}}); err != nil {
			b.Fatal(err)
		}
		commits = append(commits, time.Since(start))
	}
	return pct(puts, 99), pct(commits, 99)
}

// followNotices drains the store's commit notices as an agent does, so
// that receiving them counts in the process's CPU; stop ends it.
func followNotices(b *testing.B, e *realEnv) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.meta.Notices(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range ch {
		}
	})
	return func() { cancel(); wg.Wait() }
}

// BenchmarkFlushCPU measures the agent-side CPU of the write path on a
// real PostgreSQL (commits and their notices) and versitygw (PUTs), from
// the process's CPU time (the servers run in their own processes):
//
//   - fixed: one one-record batch per flush (append, seal, lay out, PUT,
//     commit, notice, answer), reported as cpu-ms/flush next to the goal
//     of 1 ms, with the flush's latency against the raw PUT + raw commit
//     p99 measured in the same run;
//   - per-MiB: 4 MiB files of 64 KiB batches over 16 partitions, reported
//     as cpu-ms/MiB next to the goal of 3 ms/MiB (the whole agent's at
//     maximum ingest; here the write path alone).
//
// Each with the PUT body signed (SigV4's SHA-256, the default over plain
// HTTP) and unsigned (s3store.Config.UnsignedPayload). The batches are
// encoded once, before the clock starts.
func BenchmarkFlushCPU(b *testing.B) {
	for _, unsigned := range []bool{false, true} {
		sign := func(c *s3store.Config) { c.UnsignedPayload = unsigned }
		name := map[bool]string{false: "signed", true: "unsigned"}[unsigned]
		b.Run("fixed/"+name, func(b *testing.B) { benchFixed(b, sign) })
		b.Run("per-MiB/"+name, func(b *testing.B) { benchPerMiB(b, sign) })
	}
}

// benchFixed is BenchmarkFlushCPU's fixed cost of a flush.
func benchFixed(b *testing.B, sign func(*s3store.Config)) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute // Flush seals each file
	e := newRealEnvS3(b, cfg, sign)
	topic, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: "cpu-fixed", Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	data := batch(b, 1, "f")
	putP99, commitP99 := rawLimits(b, e, topic, len(data)+128, 100)
	stop := followNotices(b, e)
	defer stop()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu0 := processCPU(b)
	for range b.N {
		start := time.Now()
		p, err := e.b.Append(ctx, topic.ID, 0, data)
		if err != nil {
			b.Fatal(err)
		}
		e.b.Flush()
		if _, err := p.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	perFlush := ms(cpu) / float64(b.N)
	b.ReportMetric(perFlush, "cpu-ms/flush")
	b.ReportMetric(perFlush/1.0, "cpu/goal")
	b.ReportMetric(ms(pct(lat, 99)), "flush-p99-ms")
	b.ReportMetric(ms(putP99+commitP99), "put+commit-p99-ms")
	b.ReportMetric(float64(pct(lat, 99))/float64(putP99+commitP99), "flush-p99/limit")
}

// benchPerMiB is BenchmarkFlushCPU's cost per MiB.
func benchPerMiB(b *testing.B, sign func(*s3store.Config)) {
	const parts, batchBytes, fileBytes = 16, 64 << 10, 4 << 20
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	e := newRealEnvS3(b, cfg, sign)
	topic, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: "cpu-mib", Partitions: parts})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]kbatch.Record, 60)
	for i := range recs {
		recs[i] = kbatch.Record{Timestamp: 1700000000000 + int64(i), Key: []byte(fmt.Sprint(i)), Value: make([]byte, batchBytes/len(recs)-20)}
	}
	data, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		b.Fatal(err)
	}
	perFile := fileBytes / len(data)
	stop := followNotices(b, e)
	defer stop()
	ctx := context.Background()
	pend := make([]*batcher.Pending, perFile)
	b.SetBytes(int64(perFile * len(data)))
	b.ResetTimer()
	cpu0 := processCPU(b)
	for range b.N {
		for i := range pend {
			if pend[i], err = e.b.Append(ctx, topic.ID, int32(i%parts), data); err != nil {
				b.Fatal(err)
			}
		}
		e.b.Flush()
		for _, p := range pend {
			if _, err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	mib := float64(b.N*perFile*len(data)) / (1 << 20)
	b.ReportMetric(ms(cpu)/mib, "cpu-ms/MiB")
	b.ReportMetric(ms(cpu)/mib/3, "cpu/goal")
}
