package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestHistQuantile(t *testing.T) {
	// Two agents' histograms of the same series, summed by HistQuantile:
	// 10 observations ≤ 1 ms, 80 in (1, 2] ms, 10 in (2, 4] ms.
	m := Metrics{
		`x_seconds_bucket{code="OK",le="0.001"}`: 4, `x_seconds_bucket{code="OK",le="0.002"}`: 40, `x_seconds_bucket{code="OK",le="0.004"}`: 45, `x_seconds_bucket{code="OK",le="+Inf"}`: 45,
		`x_seconds_bucket{code="OK",le="0.001",agent="b"}`: 6, `x_seconds_bucket{code="OK",le="0.002",agent="b"}`: 50, `x_seconds_bucket{code="OK",le="0.004",agent="b"}`: 55, `x_seconds_bucket{code="OK",le="+Inf",agent="b"}`: 55,
		// another code: not matched
		`x_seconds_bucket{code="Unavailable",le="0.001"}`: 0, `x_seconds_bucket{code="Unavailable",le="+Inf"}`: 1000,
		`x_seconds_count{code="OK"}`: 100,
	}
	for _, c := range []struct {
		q, want float64
	}{
		{0.05, 0.0005}, // within the first bucket, from 0
		{0.10, 0.001},
		{0.50, 0.0015}, // 40 of the 80 in (1, 2]
		{0.95, 0.003},  // 5 of the 10 in (2, 4]
		{0.99, 0.0038},
	} {
		if got := HistQuantile(m, "x_seconds", c.q, "code", "OK"); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("HistQuantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	// Everything beyond the last finite bound: that bound.
	inf := Metrics{`y_bucket{le="0.5"}`: 0, `y_bucket{le="+Inf"}`: 3}
	if got := HistQuantile(inf, "y", 0.99); got != 0.5 {
		t.Errorf("+Inf bucket: got %v, want 0.5", got)
	}
	if got := HistQuantile(Metrics{}, "y", 0.99); !math.IsNaN(got) {
		t.Errorf("empty histogram: got %v, want NaN", got)
	}
	q := histQuantiles(m, "x_seconds", "code", "OK")
	if q.Count != 100 || math.Abs(q.P50Ms-1.5) > 1e-6 || math.Abs(q.P99Ms-3.8) > 1e-6 {
		t.Errorf("histQuantiles = %+v", q)
	}
}

func TestAgentStagesGC(t *testing.T) {
	var b Breakdown
	b.agentStages(Metrics{"go_gc_duration_seconds_count": 20, "go_gc_duration_seconds_sum": 0.1,
		`go_sched_latencies_seconds_bucket{le="0.001"}`: 99, `go_sched_latencies_seconds_bucket{le="0.002"}`: 100,
		`go_sched_latencies_seconds_bucket{le="+Inf"}`: 100, "go_sched_latencies_seconds_count": 100}, 10)
	if b.AgentGCPausesPerSec != 2 || math.Abs(b.AgentGCPauseMeanMs-5) > 1e-9 {
		t.Fatalf("GC figures = %v/s, mean %v ms; want 2/s, 5 ms", b.AgentGCPausesPerSec, b.AgentGCPauseMeanMs)
	}
	if math.Abs(b.AgentSchedP99Ms-1) > 1e-9 {
		t.Fatalf("agents' scheduling p99 = %v ms, want 1", b.AgentSchedP99Ms)
	}
}

func TestHostCPUAccountsOwnTree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc") // the harness runs on Linux; elsewhere only its own CPU is reported
	}
	a := sampleHost([]int{os.Getpid()})
	if !a.ok {
		t.Fatal("sampleHost could not read /proc/stat")
	}
	// Burn 200 ms of CPU in this process (CPU time, not wall time: the
	// machine may be busy).
	c0, _ := processCPU()
	for {
		if c, _ := processCPU(); c-c0 >= 200*time.Millisecond {
			break
		}
	}
	z := sampleHost([]int{os.Getpid()})
	u := cpuUse(a, z, 1, 0.25) // per second: seconds
	if u.Harness < 0.2 {
		t.Fatalf("the harness counted %v s of CPU; want at least 0.2", u.Harness)
	}
	// /proc counts in 10 ms ticks: the process tree rooted at this
	// process is this process.
	if math.Abs(u.Services-u.Harness) > 0.05 {
		t.Fatalf("the process tree counted %v s, rusage %v s", u.Services, u.Harness)
	}
	if u.Machine < 0.15 {
		t.Fatalf("the machine counted %v s busy while this test spun", u.Machine)
	}
	if u.Servers != 0.25 || u.Cores != runtime.NumCPU() {
		t.Fatalf("servers %v (want 0.25), cores %d", u.Servers, u.Cores)
	}
}

func TestGenerateTiming(t *testing.T) {
	// Every Send blocks 30 ms and every answer comes 20 ms after it: the
	// send call shows the 30 ms, the answer at least 50 ms after the
	// call, and the lag grows as records wait for the blocked sender.
	sink := &fakeSink{
		sendDelay: func(*Batch) time.Duration { return 30 * time.Millisecond },
		ackAt:     func(*Batch) time.Time { return time.Now().Add(20 * time.Millisecond) },
	}
	start := time.Now().Add(20 * time.Millisecond)
	cfg := genConfig(start, 1000, 300*time.Millisecond)
	cfg.timing = newSendTiming()
	lat := NewHistogram()
	if _, err := Generate(context.Background(), cfg, sink, lat, nil); err != nil {
		t.Fatal(err)
	}
	sink.wg.Wait()
	var b Breakdown
	cfg.timing.fill(&b)
	if b.SendCall.Count == 0 || b.SendCall.P50Ms < 29 {
		t.Errorf("send call = %+v, want every request about 30 ms", b.SendCall)
	}
	if b.Answer.Count == 0 || b.Answer.P50Ms < 49 {
		t.Errorf("answer = %+v, want at least 50 ms after the call", b.Answer)
	}
	if b.SendLag.Count == 0 || b.SendLag.P99Ms < 20 {
		t.Errorf("send lag = %+v, want records waiting for the blocked sender", b.SendLag)
	}
	if got := lat.Summary().P50Ms; got < b.Answer.P50Ms {
		t.Errorf("produce p50 %v below the answer's p50 %v: latency is from the intended time", got, b.Answer.P50Ms)
	}
}

func TestWriteBreakdown(t *testing.T) {
	x := RunResult{System: "floe", TargetRate: 20000, Produce: Summary{Count: 10, P50Ms: 30, P99Ms: 60}, Breakdown: &Breakdown{
		SendLag: Summary{Count: 10, P50Ms: 0.5, P99Ms: 1}, Answer: Summary{Count: 10, P50Ms: 29, P99Ms: 59},
		SealToCommit: Quantiles{Count: 5, P50Ms: 9, P99Ms: 31},
		CPU:          CPUUse{Cores: 2, Machine: 1.5, Harness: 0.3, Servers: 0.6, Services: 0.4},
	}}
	var b strings.Builder
	writeBreakdown(&b, x)
	for _, want := range []string{"| harness: intended → request handed to the client (tick, generator lateness) | 10 | 0.50 | 1.00 |",
		"| agents: file sealed → committed, per file | 5 | 9.00 | 31.0 |", "machine 1.50", "other work 0.20"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("breakdown lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "upload") {
		t.Errorf("a stage not exported is shown:\n%s", b.String())
	}
	if got := busyCell(x); got != "75% (ours 65%)" {
		t.Errorf("busyCell = %q", got)
	}
}

func TestRecordArena(t *testing.T) {
	// Records from a reused arena equal fresh ones (MakeValue), across a
	// shrink and a growth of the batch.
	a := recordArena{size: 100}
	for _, n := range []int{5, 3, 9} {
		b := &Batch{First: int64(10 * n), Intended: make([]int64, n)}
		for i := range b.Intended {
			b.Intended[i] = int64(1000*n + i)
		}
		recs := a.records(7, b)
		if len(recs) != n {
			t.Fatalf("%d records for %d", len(recs), n)
		}
		for i, r := range recs {
			idx := uint64(b.First) + uint64(i)
			if want := MakeValue(100, b.Intended[i], idx); !bytes.Equal(r.GetValue(), want) {
				t.Fatalf("batch of %d, record %d: value differs from MakeValue", n, i)
			}
			if got := binary.BigEndian.Uint64(r.GetKey()); got != 7<<40|idx || len(r.GetKey()) != 8 {
				t.Fatalf("batch of %d, record %d: key %x", n, i, r.GetKey())
			}
			if cap(r.GetValue()) != 100 {
				t.Fatalf("a value's capacity reaches into the next: %d", cap(r.GetValue()))
			}
		}
	}
}
