package main_test

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/bench"
	"github.com/floe-broker/floe/internal/testenv"
)

// The binaries under test, built side by side as `make build` leaves them,
// so floe-bench finds floe beside itself.
var floeBin, benchBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "floe-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	floeBin, benchBin = filepath.Join(dir, "floe"), filepath.Join(dir, "floe-bench")
	for bin, pkg := range map[string]string{floeBin: "../floe", benchBin: "."} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	testenv.Main(m)
}

// TestBenchSmoke runs `floe-bench -start dev` for two seconds with the e2e
// workload and checks the report: throughput, latencies, one PUT per
// commit, the limits and the three output files.
func TestBenchSmoke(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, benchBin, "-start", "dev", "-workload", "e2e",
		"-duration", "2s", "-warmup", "500ms", "-rate", "500", "-partitions", "8",
		"-limits-duration", "300ms", "-linger", "50ms", "-out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("floe-bench: %v\nstderr:\n%s", err, stderr.String())
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
		{},
		{"-start", "nowhere"},
		{"-start", "dev", "-addr", "127.0.0.1:1"},
		{"-addr", "127.0.0.1:1", "-peer", "kafka"},
		{"-start", "dev", "-floe", filepath.Join(t.TempDir(), "no-such-floe")},
		{"extra"},
	} {
		out, err := exec.Command(benchBin, args...).CombinedOutput()
		if err == nil {
			t.Errorf("floe-bench %v succeeded:\n%s", args, out)
		}
	}
}

// TestBenchNotInBroker checks that the broker users deploy links neither
// the benchmark harness, nor the process launchers (go install, initdb),
// nor the NATS client: its package list and its binary's modules.
func TestBenchNotInBroker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/floe-broker/floe/cmd/floe").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/floe-broker/floe/bench", "github.com/floe-broker/floe/internal/services", "github.com/nats-io/"}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list -deps gave %d packages: %s", len(pkgs), out)
	}
	for _, pkg := range pkgs {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") || strings.HasPrefix(pkg, f) && strings.HasSuffix(f, "/") {
				t.Errorf("cmd/floe depends on %s", pkg)
			}
		}
	}
	info, err := buildinfo.ReadFile(floeBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range info.Deps {
		if strings.Contains(strings.ToLower(mod.Path), "nats") {
			t.Errorf("bin/floe links module %s", mod.Path)
		}
	}
}

// TestBenchTLS: -tls runs the agents' gRPC over TLS and the harness
// dials them with TLS: records flow end to end and the report says so.
func TestBenchTLS(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, benchBin, "-start", "dev", "-tls", "-workload", "e2e",
		"-duration", "1s", "-warmup", "300ms", "-rate", "300", "-partitions", "2",
		"-limits-duration", "0", "-linger", "50ms", "-quiet", "-out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("floe-bench -tls: %v\nstderr:\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Settings.Deployment, "gRPC over TLS") || rep.Floe.Acked == 0 || rep.Floe.Consumed != rep.Floe.Acked {
		t.Fatalf("over TLS: deployment %q, %d acknowledged, %d consumed", rep.Settings.Deployment, rep.Floe.Acked, rep.Floe.Consumed)
	}
}

// -systems names only known systems, once each, and fails before starting
// anything.
func TestBenchSystemsFlag(t *testing.T) {
	for _, v := range []string{"floe-kafka,redpanda", "kafka,kafka", ","} {
		cmd := exec.Command(benchBin, "-start", "dev", "-systems", v)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.HasPrefix(string(out), "floe-bench: flag -systems:") || strings.Count(string(out), "\n") != 1 {
			t.Errorf("-systems %q: %v, %q", v, err, out)
		}
	}
}

// TestBenchSystemsFloe runs the side-by-side table for floe over its
// Kafka listener and over gRPC (the Apache Kafka rows need Java and the
// Maven cache: bench/kafkabroker_run_test.go, make bench).
func TestBenchSystemsFloe(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, benchBin, "-start", "dev", "-systems", "floe-kafka,floe-grpc",
		"-duration", "1s", "-warmup", "300ms", "-partitions", "4", "-producers", "2", "-record-size", "256",
		"-backlog-mb", "2", "-linger", "50ms", "-limits-duration", "500ms", "-quiet", "-out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("floe-bench: %v\nstderr:\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.CompareReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].System != "floe-kafka" || rep.Rows[1].System != "floe" {
		t.Fatalf("%d rows, want floe-kafka then floe (over gRPC)", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		// Half of the maximum sustained open-loop rate, searched from 80%
		// of the closed-loop figure down by 0.8 (not half of the closed
		// loop's burst figure).
		if r.Max.RecordsPerSec <= 0 || r.Max.Failed != 0 || len(r.Search) == 0 {
			t.Fatalf("%s: max %.0f rec/s (%d failed), %d search runs", r.System, r.Max.RecordsPerSec, r.Max.Failed, len(r.Search))
		}
		if want := math.Round(r.Max.RecordsPerSec * 0.8); r.Search[0].TargetRate != want {
			t.Errorf("%s: the search began at %v rec/s, want %v", r.System, r.Search[0].TargetRate, want)
		}
		last := r.Search[len(r.Search)-1]
		if r.SustainedRate > 0 && (r.SustainedRate != last.TargetRate || !last.Sustained(2*time.Second)) {
			t.Errorf("%s: sustained %v, but the last search run is %v rec/s (sustained: %v)", r.System, r.SustainedRate, last.TargetRate, last.Sustained(2*time.Second))
		}
		for _, x := range r.Search[:len(r.Search)-1] {
			if x.Sustained(2 * time.Second) {
				t.Errorf("%s: the search went on past %v rec/s, which was sustained", r.System, x.TargetRate)
			}
		}
		base := r.SustainedRate
		if base == 0 {
			base = last.TargetRate
		}
		if r.Half.TargetRate != math.Round(base/2) {
			t.Errorf("%s: half at %v rec/s, want half of %v", r.System, r.Half.TargetRate, base)
		}
		if r.Half.Produce.Count == 0 || r.Half.Cost.CPUMsPerMiB <= 0 {
			t.Errorf("%s: no p99 or server CPU at half: %+v %+v", r.System, r.Half.Produce, r.Half.Cost)
		}
		// Both floe rows have their floor bound, probed on the deployment's
		// store and database: linger + 1.2 × (PUT p99 + commit p99).
		if b := r.Bound; b == nil || b.LingerMs != 50 || b.PutP99Ms <= 0 || b.CommitP99Ms <= 0 || b.FlushBytes <= 0 ||
			math.Abs(b.BoundMs-(50+1.2*(b.PutP99Ms+b.CommitP99Ms))) > 1e-9 {
			t.Errorf("%s: floor bound %+v", r.System, r.Bound)
		}
		if r.Catchup == nil || r.Catchup.Catchup == nil || r.Catchup.Catchup.ReadRecords != r.Catchup.Acked || r.Catchup.Catchup.ReadMBPerSec <= 0 {
			t.Errorf("%s: catch-up %+v", r.System, r.Catchup)
		}
	}
	if !strings.Contains(stdout.String(), "| floe over Kafka (franz-go) |") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}
