package batcher_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// realEnv is a batcher on a real PostgreSQL and a real S3 server, with
// PUTs and commits counted.
type realEnv struct {
	meta   *postgres.Store
	s3     *s3store.Store
	store  *countingStore
	faulty *objectstore.Faulty
	commit *countingCommitter
	b      *batcher.Batcher
}

func newRealEnv(tb testing.TB, cfg batcher.Config) *realEnv {
	tb.Helper()
	return newRealEnvS3(tb, cfg, nil)
}

// realS3 is a store on a fresh bucket of the test S3 server, its
// configuration adjusted by adjust (optional); closed when tb ends.
func realS3(tb testing.TB, adjust func(*s3store.Config)) *s3store.Store {
	tb.Helper()
	sc := testenv.S3(tb)
	s3c := s3store.DefaultConfig()
	s3c.Bucket, s3c.Endpoint, s3c.Region, s3c.AccessKey, s3c.SecretKey, s3c.PathStyle = sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, true
	if adjust != nil {
		adjust(&s3c)
	}
	s3, err := s3store.New(context.Background(), s3c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s3.Close() })
	return s3
}

// newRealEnvS3 is newRealEnv with the S3 store's configuration adjusted
// by adjust (optional).
func newRealEnvS3(tb testing.TB, cfg batcher.Config, adjust func(*s3store.Config)) *realEnv {
	tb.Helper()
	ctx := context.Background()
	meta, err := postgres.Open(ctx, testenv.Postgres(tb), postgres.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { meta.Close() })
	e := &realEnv{meta: meta, s3: realS3(tb, adjust)}
	e.faulty = objectstore.WithFaults(e.s3, objectstore.FaultConfig{})
	e.store = &countingStore{Store: e.faulty}
	e.commit = &countingCommitter{Store: meta}
	e.b, err = batcher.New(cfg, e.store, e.commit, batcher.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.b.Close(context.Background()) })
	return e
}

// produceAll appends one batch to each of parts partitions, flushes, and
// waits for every acknowledgement.
func produceAll(tb testing.TB, b *batcher.Batcher, topic metadata.Topic, parts int32, records int) []metadata.BatchResult {
	tb.Helper()
	pend := make([]*batcher.Pending, parts)
	data := batch(tb, records, "r")
	for p := int32(0); p < parts; p++ {
		var err error
		if pend[p], err = b.Append(context.Background(), topic.ID, p, data); err != nil {
			tb.Fatal(err)
		}
	}
	b.Flush()
	res := make([]metadata.BatchResult, parts)
	for p, pd := range pend {
		r, err := pd.Wait(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		res[p] = r
	}
	return res
}

// One PUT and one commit per flush at 1 and 1000 partitions, on the real
// backends; the file reads back through the offsets the commit assigned.
func TestRealBackendsOnePutOneCommit(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	e := newRealEnv(t, cfg)
	for _, parts := range []int32{1, 1000} {
		topic, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: fmt.Sprint("t", parts), Partitions: parts})
		if err != nil {
			t.Fatal(err)
		}
		puts0, commits0 := e.store.puts.Load(), e.commit.commits.Load()
		for round := int64(0); round < 2; round++ {
			for p, r := range produceAll(t, e.b, topic, parts, 5) {
				if r.BaseOffset != round*5 {
					t.Fatalf("%d partitions, round %d: partition %d at offset %d", parts, round, p, r.BaseOffset)
				}
			}
		}
		if puts, commits := e.store.puts.Load()-puts0, e.commit.commits.Load()-commits0; puts != 2 || commits != 2 {
			t.Fatalf("%d partitions, 2 flushes: %d PUTs and %d commits", parts, puts, commits)
		}
		refs, _, err := e.meta.FindBatches(context.Background(), topic.ID, parts-1, 0, 1<<20)
		if err != nil || len(refs) != 2 {
			t.Fatalf("find batches: %v %v", refs, err)
		}
		if _, err := e.s3.Get(context.Background(), refs[1].FileKey, refs[1].ByteOffset, refs[1].ByteLength); err != nil {
			t.Fatal(err)
		}
	}
}

// S3 failing mid-stream (errors and lost responses): every acknowledged
// batch is in the log at its offset, offsets stay dense.
func TestRealBackendsFlakyStore(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = 2 * time.Millisecond
	e := newRealEnv(t, cfg)
	topic, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: "flaky", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	e.faulty.Set(objectstore.FaultConfig{ErrorRate: 0.3, LostResponseRate: 0.2, Seed: 7, Operations: []string{objectstore.OpPut}})
	var (
		mu    sync.Mutex
		acked = map[int32][]int64{}
		wg    sync.WaitGroup
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				p := int32((g + i) % 4)
				r, err := e.b.Produce(context.Background(), topic.ID, p, batch(t, 2, "f"))
				if err != nil {
					continue
				}
				mu.Lock()
				acked[p] = append(acked[p], r.BaseOffset)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	e.faulty.Set(objectstore.FaultConfig{})
	total := 0
	for p := int32(0); p < 4; p++ {
		var next int64
		var bases []int64
		for {
			refs, st, err := e.meta.FindBatches(context.Background(), topic.ID, p, next, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) == 0 {
				if next != st.HighWatermark {
					t.Fatalf("partition %d: stopped at %d, high watermark %d", p, next, st.HighWatermark)
				}
				break
			}
			for _, r := range refs {
				if r.BaseOffset != next {
					t.Fatalf("partition %d: gap at %d", p, next)
				}
				if _, err := e.s3.Get(context.Background(), r.FileKey, r.ByteOffset, r.ByteLength); err != nil {
					t.Fatalf("committed batch %d of partition %d unreadable: %v", r.BaseOffset, p, err)
				}
				for o := r.BaseOffset; o <= r.LastOffset; o++ {
					bases = append(bases, o)
				}
				next = r.LastOffset + 1
			}
		}
		sort.Slice(acked[p], func(i, j int) bool { return acked[p][i] < acked[p][j] })
		set := map[int64]bool{}
		for _, b := range bases {
			set[b] = true
		}
		for _, a := range acked[p] {
			if !set[a] || !set[a+1] {
				t.Fatalf("partition %d: acknowledged batch at %d is not in the log", p, a)
			}
		}
		total += len(acked[p])
	}
	if total == 0 {
		t.Fatal("nothing acknowledged through a 30% flaky store")
	}
	t.Logf("%d of 120 produces acknowledged through the flaky store", total)
}

// BenchmarkFlush reports PUTs and commits per flush and the flush time at
// 1 and 1000 partitions on PostgreSQL and versitygw.
func BenchmarkFlush(b *testing.B) {
	for _, parts := range []int32{1, 1000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			cfg := batcher.DefaultConfig()
			cfg.Linger = time.Minute
			e := newRealEnv(b, cfg)
			topic, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: "b", Partitions: parts})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				produceAll(b, e.b, topic, parts, 10)
			}
			b.StopTimer()
			b.ReportMetric(float64(e.store.puts.Load())/float64(b.N), "puts/flush")
			b.ReportMetric(float64(e.commit.commits.Load())/float64(b.N), "commits/flush")
		})
	}
}

// BenchmarkProduceLatency produces one small batch at a time at the
// default linger (250 ms) and reports latency percentiles next to the
// limit measured in the same run: linger + raw PUT + raw commit.
func BenchmarkProduceLatency(b *testing.B) {
	e := newRealEnv(b, batcher.DefaultConfig())
	ctx := context.Background()
	topic, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "lat", Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	data := batch(b, 10, "l")
	// Limits: a raw PUT of a file of the same size and a raw commit.
	var rawPut, rawCommit []time.Duration
	for i := range 20 {
		buf := make([]byte, len(data)+64)
		start := time.Now()
		if err := e.s3.Put(ctx, fmt.Sprintf("raw/%d", i), buf, objectstore.PutOptions{IfAbsent: true}); err != nil {
			b.Fatal(err)
		}
		rawPut = append(rawPut, time.Since(start))
		start = time.Now()
		if _, err := e.meta.CommitFile(ctx, metadata.FileCommit{Key: fmt.Sprintf("raw/%d", i), Size: int64(len(buf)), Batches: []metadata.BatchCommit{{
			TopicID: topic.ID, Partition: 0, ByteOffset: 0, ByteLength: int64(len(data)), RecordCount: 10, ProducerID: -1, BaseSequence: metadata.NoSequence}}}); err != nil {
			b.Fatal(err)
		}
		rawCommit = append(rawCommit, time.Since(start))
	}
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := e.b.Produce(ctx, topic.ID, 0, data); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	limit := batcher.DefaultConfig().Linger + pct(rawPut, 50) + pct(rawCommit, 50)
	b.ReportMetric(ms(pct(lat, 50)), "p50-ms")
	b.ReportMetric(ms(pct(lat, 99)), "p99-ms")
	b.ReportMetric(ms(limit), "limit-ms")
	b.ReportMetric(float64(pct(lat, 50))/float64(limit), "p50/limit")
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
