package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/bench"
)

// TestBenchSmoke runs `floe bench -start dev` for two seconds with the e2e
// workload and checks the report: throughput, latencies, one PUT per
// commit, the limits and the three output files.
func TestBenchSmoke(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, floeBin, "bench", "-start", "dev", "-workload", "e2e",
		"-duration", "2s", "-warmup", "500ms", "-rate", "500", "-partitions", "8",
		"-limits-duration", "300ms", "-linger", "50ms", "-out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("floe bench: %v\nstderr:\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	f := rep.Floe
	if f.RecordsPerSec <= 0 || f.MBPerSec <= 0 || f.Acked == 0 || f.Failed != 0 {
		t.Fatalf("no throughput: %+v", f)
	}
	if f.Produce.Count == 0 || f.Produce.P99Ms <= 0 || f.E2E == nil || f.E2E.Count == 0 || f.Consumed != f.Acked {
		t.Fatalf("latencies: produce %+v, e2e %+v, consumed %d of %d", f.Produce, f.E2E, f.Consumed, f.Acked)
	}
	c := f.Cost
	if c.RunPUTs == 0 || c.RunPUTs != c.RunCommits || c.RunPUTs != c.RunFlushes {
		t.Fatalf("want exactly one PUT per commit per flush: %.0f PUTs, %.0f commits, %.0f flushes", c.RunPUTs, c.RunCommits, c.RunFlushes)
	}
	if c.CPUSeconds <= 0 || c.PeakRSSBytes <= 0 || !c.ServersAlive {
		t.Fatalf("agent figures: %+v", c)
	}
	if rep.Limits.StoreMax == nil || rep.Limits.StoreMax.Put.MBPerSec <= 0 || rep.Limits.Commit == nil || rep.Limits.Commit.Commits == 0 {
		t.Fatalf("limits: %+v", rep.Limits)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| produce latency p99, ms |") || !strings.Contains(stdout.String(), "## Goals") {
		t.Fatalf("report.md / stdout lack the tables:\n%s", md)
	}
	svg, err := os.ReadFile(filepath.Join(out, "latency.svg"))
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) {
		t.Fatalf("latency.svg: %v %.60q", err, svg)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "-start", "nowhere"},
		{"bench", "-start", "dev", "-addr", "127.0.0.1:1"},
		{"bench", "-addr", "127.0.0.1:1", "-peer", "kafka"},
	} {
		out, err := exec.Command(floeBin, args...).CombinedOutput()
		if err == nil {
			t.Errorf("floe %v succeeded:\n%s", args, out)
		}
	}
}
