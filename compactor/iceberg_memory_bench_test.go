package compactor_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/objectstore"
)

// BenchmarkIcebergPassMemory measures the memory of the Iceberg job's
// first pass over a table of 1,000 partitions, each holding a batch of
// about 2.5 KiB (2.5 MiB of log), under a 1 MiB IcebergMaxBytes, on SQLite
// and a local directory: read-MiB (batch bytes read from the object
// store), peak-heap-MiB (the heap's live objects, sampled every 200 µs,
// above their level before the pass) and each against the bound
// (read/bound, peak/bound).
func BenchmarkIcebergPassMemory(b *testing.B) {
	const parts, bound = 1000, 1 << 20
	ctx := context.Background()
	meta := mustSQLite(b)
	dir, err := objectstore.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	e := iceEnv{env: env{meta: meta, store: dir}, cfg: icetest.SQLiteConfig(b)}
	rc := &readCounter{Store: dir}
	w, _ := e.writer(b)
	all := make([]int32, parts)
	for i := range all {
		all[i] = int32(i)
	}
	rnd := mrand.New(mrand.NewPCG(51, 52))
	var read, peak int64
	for i := range b.N {
		tp := createTopic(b, e.env, fmt.Sprintf("mem%d", i), parts, map[string]string{"iceberg.lag": "0"})
		produce(b, e.env, tp.ID, all, 24, produced{}, rnd)
		c := iceCompactor(b, iceEnv{env: env{meta: meta, store: rc}, cfg: e.cfg}, fmt.Sprintf("mem%d", i), w, func(c *compactor.Config) {
			c.IcebergMaxBytes = bound
			c.MergeSmallBytes, c.CompactMaxBytes = 0, 0
		})
		rc.take()
		p := heapPeak(func() { runOnce(b, c) })
		r, _, _ := rc.take()
		read, peak = max(read, r), max(peak, p)
		_ = meta.DeleteTopic(ctx, tp.Name)
	}
	b.ReportMetric(float64(read)/(1<<20), "read-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(read)/bound, "read/bound")
	b.ReportMetric(float64(peak)/bound, "peak/bound")
}

// heapPeak runs fn and returns the most the heap's live objects grew
// above their level before it, sampled every 200 µs.
func heapPeak(fn func()) int64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 { metrics.Read(sample); return int64(sample[0].Value.Uint64()) }
	runtime.GC()
	base := read()
	var (
		peak int64
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read()-base)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	return max(peak, read()-base)
}
