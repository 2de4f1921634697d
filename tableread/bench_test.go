package tableread_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/tableread"
)

// BenchmarkCatchUp reads 4 partitions of 5,000 records of about 1 KiB
// each from the start, as consumers catching up do (1 MiB reads, the
// partitions in turn), from a SQLite catalog with a local warehouse:
// the table read path's CPU and allocations per MiB served.
func BenchmarkCatchUp(b *testing.B) {
	const parts, per = 4, 5000
	w, _ := icetest.Open(b, icetest.SQLiteConfig(b), iceberg.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const topic = "catchup"
	pad := strings.Repeat("x", 1000)
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	appendSequential(b, ctx, w, topic, parts, per, 1000, day, func(p int32, off int64) ([]byte, []byte) {
		return fmt.Appendf(nil, "k%d", off%100), fmt.Appendf(nil, `{"p":%d,"o":%d,"pad":"%s"}`, p, off, pad)
	})
	runtime.GC()
	// The peak of the live heap objects during the reads, sampled.
	var peak uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	b.ResetTimer()
	cpu0 := cpuTime()
	var served, scans int64
	for range b.N {
		r, err := tableread.New(w, tableread.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		next := map[int32]int64{}
		for done := 0; done < parts; {
			done = 0
			for p := range int32(parts) {
				if next[p] >= per {
					done++
					continue
				}
				bs, err := r.Read(ctx, topic, p, next[p], per, 1<<20)
				if err != nil || len(bs) == 0 {
					b.Fatalf("read %d at %d: %d batches, %v", p, next[p], len(bs), err)
				}
				for _, bt := range bs {
					served += int64(len(bt.Data))
					next[p] = bt.LastOffset + 1
				}
			}
		}
		scans += tableread.Scans(r)
	}
	b.ReportMetric(float64(scans)/float64(b.N), "scans/op")
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(served)/float64(b.N)/(1<<20), "MiB/op")
	// The process's CPU (every goroutine: the scans' decoders, GC) per
	// MiB served: the figure the agent's catch-up from the table is held
	// to, without the network.
	b.ReportMetric(float64(cpu.Milliseconds())/(float64(served)/(1<<20)), "cpu-ms/MiB")
	close(stop)
	<-sampled
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.SetBytes(served / int64(b.N))
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
