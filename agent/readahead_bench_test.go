package agent_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

const (
	catchupParts = 16
	catchupBytes = 384 << 20 // more than the read cache (256 MiB)
)

// BenchmarkCatchupRead: a cold agent reads a backlog of 16 partitions,
// laid out in shared 8 MiB files on S3 (versitygw), 4 partitions at a
// time and 4 MiB per read through readRange — what a subscription's
// readers and the batch data plane do, without encoding responses —
// against raw GETs of the same files, 4 at once, in the same run. It
// reports both in MB/s and their ratio (goal: ≥ 0.70). Run it with
// -benchtime 1x (each iteration reads the whole backlog with a new agent).
func BenchmarkCatchupRead(b *testing.B) {
	meta, store, err := writeCatchupBacklog(b)
	if err != nil {
		b.Fatal(err)
	}
	for _, ra := range []int64{0, agent.DefaultConfig().ReadaheadBytes} {
		b.Run(fmt.Sprintf("readahead=%dMiB", ra>>20), func(b *testing.B) {
			var readMB, rawMB float64
			for range b.N {
				cfg := agent.DefaultConfig()
				cfg.ReadaheadBytes = ra
				r, stop := benchNode(b, meta, store, cfg)
				read, secs, files, err := catchupRead(r.ag)
				stop()
				if err != nil {
					b.Fatal(err)
				}
				readMB = float64(read) / secs / 1e6
				if rawMB, err = rawGets(store, files); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(readMB, "read-MB/s")
			b.ReportMetric(rawMB, "rawGET-MB/s")
			b.ReportMetric(readMB/rawMB, "ratio")
		})
	}
}

// writeCatchupBacklog writes catchupBytes of 1 KiB records over
// catchupParts partitions, all partitions at once (so that they share
// files), on PostgreSQL and S3.
func writeCatchupBacklog(b *testing.B) (metadata.Store, objectstore.Store, error) {
	ctx := context.Background()
	meta, err := postgres.Open(ctx, testenv.Postgres(b), postgres.DefaultOptions())
	if err != nil {
		return nil, nil, err
	}
	b.Cleanup(func() { meta.Close() })
	sc := testenv.S3(b)
	c := s3store.DefaultConfig()
	c.Bucket, c.Endpoint, c.Region, c.AccessKey, c.SecretKey, c.PathStyle = sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, true
	store, err := s3store.New(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	b.Cleanup(func() { store.Close() })
	wcfg := agent.DefaultConfig()
	wcfg.CacheBytes = 0
	w, stop := benchNode(b, meta, store, wcfg)
	defer stop()
	if _, err := w.c.CreateTopic(ctx, "catchup", catchupParts, nil); err != nil {
		return nil, nil, err
	}
	recs := make([]*floev1.Record, 1000)
	for i := range recs {
		recs[i] = &floev1.Record{Value: make([]byte, 1<<10)}
	}
	var g errgroup.Group
	for p := range int32(catchupParts) {
		g.Go(func() error {
			for range catchupBytes / catchupParts / (1000 << 10) {
				if _, err := w.c.Produce(ctx, "catchup", p, recs...); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return meta, store, g.Wait()
}

// catchupRead reads every partition from 0 to its high watermark, 4 at a
// time, and returns the bytes, the seconds and the files read.
func catchupRead(a *agent.Agent) (int64, float64, map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	todo := make(chan int32, catchupParts)
	offsets := make([]int64, catchupParts)
	for p := range int32(catchupParts) {
		todo <- p
	}
	var read atomic.Int64
	var left atomic.Int32
	left.Store(catchupParts)
	var mu sync.Mutex
	files := map[string]int64{}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range 4 {
		g.Go(func() error {
			mine := map[string]int64{}
			defer func() {
				mu.Lock()
				for k, v := range mine {
					files[k] = v
				}
				mu.Unlock()
			}()
			for left.Load() > 0 {
				var p int32
				select {
				case p = <-todo:
				case <-gctx.Done():
					return gctx.Err()
				case <-time.After(10 * time.Millisecond):
					continue
				}
				n, next, hw, err := agent.ReadRangeBytes(gctx, a, "catchup", p, offsets[p], 4<<20, mine)
				if err != nil {
					return err
				}
				read.Add(n)
				offsets[p] = next
				if next >= hw {
					left.Add(-1)
					continue
				}
				todo <- p
			}
			return nil
		})
	}
	err := g.Wait()
	return read.Load(), time.Since(start).Seconds(), files, err
}

// rawGets reads files whole, 4 at once, and returns the MB/s.
func rawGets(store objectstore.Store, files map[string]int64) (float64, error) {
	ctx := context.Background()
	keys := make(chan string, len(files))
	for k := range files {
		keys <- k
	}
	close(keys)
	var n atomic.Int64
	start := time.Now()
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			for k := range keys {
				b, err := store.Get(ctx, k, 0, -1)
				if err != nil {
					return err
				}
				n.Add(int64(len(b)))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return float64(n.Load()) / time.Since(start).Seconds() / 1e6, nil
}

// benchNode runs an agent with a batcher and a gRPC client, as startNode
// does for tests, until stop.
func benchNode(b *testing.B, meta metadata.Store, store objectstore.Store, acfg agent.Config) (*node, func()) {
	a := agenttest.Start(b, meta, store, agenttest.Options{Agent: acfg, Batcher: batcher.DefaultConfig()})
	return &node{c: a.Client, ag: a.Agent, lis: a}, a.Kill
}
