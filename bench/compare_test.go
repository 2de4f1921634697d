package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestCompareConfigValidate(t *testing.T) {
	sys := &KafkaSystem{cfg: KafkaConfig{Name: "k"}}
	open := func(context.Context) (System, func(), error) { return sys, func() {}, nil }
	for name, c := range map[string]CompareConfig{
		"no targets": {},
		"neither":    {Targets: []CompareTarget{{Label: "x"}}},
		"both":       {Targets: []CompareTarget{{Label: "x", System: sys, Open: open}}},
	} {
		if _, err := RunCompare(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCompareMarkdown(t *testing.T) {
	rep := &CompareReport{Host: Host{CPUs: 2, OS: "linux/amd64"}, Command: "floe-bench -systems kafka", Run: DefaultRunConfig(),
		Rows: []CompareRow{{
			System: "kafka", Label: "Apache Kafka 4.1 (flush.messages=1)",
			Max:           RunResult{RecordsPerSec: 12345, MBPerSec: 12.6},
			SustainedRate: 7901,
			Half: RunResult{System: "kafka", TargetRate: 3950, Produce: Summary{P99Ms: 4.25}, Cost: Cost{CPUMsPerMiB: 31.5},
				Breakdown: &Breakdown{CPU: CPUUse{Cores: 2, Machine: 1, Harness: 0.2, Servers: 0.3}}},
			Catchup: &RunResult{Catchup: &CatchupResult{ReadMBPerSec: 250.04}},
		}, {
			System: "floe-grpc", Label: "floe over gRPC",
			Max:   RunResult{RecordsPerSec: 900, MBPerSec: 0.9},
			Half:  RunResult{Produce: Summary{P99Ms: 300}},
			Bound: &FloorBound{BoundMs: 250},
		}}}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`floe-bench -systems kafka`",
		// No floor bound for a system that writes no objects.
		"| Apache Kafka 4.1 (flush.messages=1) | 12345 | 12.6 | 7901 | 4.2 | – | 31.5 | 50% (ours 25%) | 250.0 |",
		// No server CPU figure and no catch-up: dashes, not zeros.
		"| floe over gRPC | 900 | 0.9 | none sustained | 300.0 | 1.20 (250 ms) | – | — | – |",
		"### Apache Kafka 4.1 (flush.messages=1): where the produce latency went (kafka, 3950 rec/s)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestSearchSustained(t *testing.T) {
	// A system that sustains up to 5,000 rec/s: from 80% of a closed-loop
	// 10,000 down by 0.8: 8,000 and 6,400 fail, 5,120 holds.
	var tried []float64
	run := func(rate float64) (RunResult, error) {
		tried = append(tried, rate)
		r := RunResult{TargetRate: rate, Seconds: 10, RecordsPerSec: min(rate, 5200), Produce: Summary{P99Ms: 50}}
		return r, nil
	}
	runs, sustained, err := searchSustained(10000, 2*time.Second, run)
	if err != nil {
		t.Fatal(err)
	}
	if sustained != 5120 || len(runs) != 3 || tried[0] != 8000 || tried[1] != 6400 {
		t.Fatalf("tried %v, sustained %v; want 8000, 6400, 5120 and 5120", tried, sustained)
	}
	// Nothing sustained (every p99 too high): searchTries runs, zero.
	tried = nil
	runs, sustained, _ = searchSustained(10000, 10*time.Millisecond, run)
	if sustained != 0 || len(runs) != searchTries {
		t.Fatalf("p99 above the bound everywhere: %d runs, sustained %v", len(runs), sustained)
	}
}

func TestSustained(t *testing.T) {
	base := RunResult{TargetRate: 10000, Seconds: 10, RecordsPerSec: 10000, Produce: Summary{P99Ms: 100}}
	for _, c := range []struct {
		name   string
		mutate func(*RunResult)
		want   bool
	}{
		{"steady", func(*RunResult) {}, true},
		{"97% acknowledged", func(r *RunResult) { r.RecordsPerSec = 9700 }, true},
		// Followed (≥ 90%) but 5% short of the offer: the backlog grows.
		{"95% acknowledged", func(r *RunResult) { r.RecordsPerSec = 9500 }, false},
		{"p99 above the bound", func(r *RunResult) { r.Produce.P99Ms = 2001 }, false},
		{"a failure", func(r *RunResult) { r.Failed = 1 }, false},
		{"closed loop", func(r *RunResult) { r.TargetRate = 0 }, false},
	} {
		r := base
		c.mutate(&r)
		if c.name == "95% acknowledged" && !r.Followed() {
			t.Errorf("%s: not even Followed", c.name)
		}
		if got := r.Sustained(2 * time.Second); got != c.want {
			t.Errorf("%s: Sustained = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFloorBound(t *testing.T) {
	// The suite's bound: linger + 1.2 × (PUT p99 + commit p99).
	if got := floorBound(20, 30, 5); got != 62 {
		t.Fatalf("floorBound(20, 30, 5) = %v, want 62", got)
	}
	// No probe, or no flush size (Apache Kafka's rows): no bound.
	var p *CompareProbe
	if b, err := p.probeBound(context.Background(), 1<<20); b != nil || err != nil {
		t.Fatalf("nil probe: %v %v", b, err)
	}
	if b, err := (&CompareProbe{Duration: time.Second}).probeBound(context.Background(), 0); b != nil || err != nil {
		t.Fatalf("zero flush: %v %v", b, err)
	}
}
