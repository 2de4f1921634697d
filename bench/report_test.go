package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func summary(p50 float64) Summary {
	return Summary{Count: 1000, MeanMs: p50 * 1.1, P50Ms: p50, P90Ms: p50 * 1.5, P99Ms: p50 * 1.8, P999Ms: p50 * 2, MaxMs: p50 * 2.5}
}

func floeRun(rate, mbps, p50 float64) RunResult {
	e := summary(p50 + 5)
	return RunResult{
		System: "floe", Workload: WorkloadE2E, TargetRate: rate, Seconds: 10,
		Sent: int64(rate * 10), Acked: int64(rate * 10), RecordsPerSec: rate, MBPerSec: mbps,
		Produce: summary(p50), E2E: &e, Consumed: int64(rate * 10),
		ProduceDist: []Point{{0, p50 / 2}, {90, p50 * 1.5}, {99, p50 * 1.8}, {99.95, p50 * 2.5}},
		Cost: Cost{
			PUTs: 40, Commits: 40, Flushes: 40, PUTsPerSec: 4, CommitsPerSec: 4, PUTsPerMB: 4 / mbps, CommitsPerMB: 4 / mbps,
			RunPUTs: 52, RunCommits: 52, RunFlushes: 52, PUTsPerFlush: 1, CommitsPerFlush: 1,
			MeanFlushBytes: mbps * 1e6 / 4, CPUSeconds: 2, CPUSecPerGiB: 12, CPUMsPerMiB: 11.7,
			PeakRSSBytes: 200 << 20, ServersAlive: true,
		},
	}
}

// fixtureReport is a sweep with a peer, every figure fixed.
func fixtureReport() *Report {
	max := floeRun(0, 60, 300)
	max.RecordsPerSec = 58000
	r := &Report{
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Host:    Host{CPUs: 2, GoVersion: "go1.26.8", OS: "linux/amd64", Hostname: "bench"},
		Settings: Settings{Deployment: "floe dev (local directory + SQLite)", Command: "floe bench -start dev -sweep -peer jetstream",
			Workload: WorkloadE2E, Partitions: 16, Producers: 4, Consumers: 1, RecordSize: 1024,
			WarmupSeconds: 1, DurationSeconds: 3, LingerMs: 250, MaxFileBytes: 8 << 20, MaxBufferedBytes: 64 << 20,
			CacheBytes: 256 << 20, Sweep: true, SweepMaxP99Ms: 2000, Peer: "jetstream"},
		FloeMax:         &max,
		FloeSweep:       []RunResult{floeRun(5800, 5.9, 150), floeRun(29000, 29.7, 160), floeRun(58000, 40, 900)},
		SustainableRate: 29000,
		Limits: Limits{
			StoreMax:   &StoreLimits{Store: "local directory", ObjectBytes: 8 << 20, Concurrency: 4, Seconds: 2, Put: RawOps{Ops: 80, OpsPerSec: 40, MBPerSec: 335, Latency: summary(80)}, Get: RawOps{Ops: 400, OpsPerSec: 200, MBPerSec: 1677, Latency: summary(7)}},
			StoreFlush: &StoreLimits{Store: "local directory", ObjectBytes: 300 << 10, Concurrency: 4, Seconds: 2, Put: RawOps{Ops: 800, OpsPerSec: 400, MBPerSec: 122, Latency: summary(6)}, Get: RawOps{Ops: 4000, OpsPerSec: 2000, MBPerSec: 614, Latency: summary(0.1)}},
			Commit:     &CommitLimits{Store: "SQLite", Commits: 18000, PerSecond: 9000, Latency: summary(0.05)},
		},
		Notes: []string{"a note"},
	}
	r.FloeSweep[2].RecordsPerSec = 39000
	r.Floe = r.FloeSweep[1]
	pmax := floeRun(0, 90, 20)
	pmax.System = "jetstream"
	r.PeerMax = &pmax
	for _, f := range r.FloeSweep {
		p := f
		p.System = "jetstream"
		p.Produce, p.ProduceDist = summary(3), []Point{{0, 1}, {90, 4}, {99, 6}}
		e := summary(4)
		p.E2E = &e
		p.Cost = Cost{CPUSeconds: 1, CPUSecPerGiB: 6, CPUMsPerMiB: 5.9, PeakRSSBytes: 100 << 20, ServersAlive: true}
		r.PeerSweep = append(r.PeerSweep, p)
	}
	r.Peer = &r.PeerSweep[1]
	r.Goals = EvaluateGoals(r)
	return r
}

func singleReport() *Report {
	r := fixtureReport()
	r.Settings.Sweep, r.Settings.Peer, r.Settings.Rate, r.Settings.Workload = false, "", 2000, WorkloadProduce
	r.Settings.Command = "floe bench -start dev -rate 2000"
	r.FloeMax, r.FloeSweep, r.PeerMax, r.PeerSweep, r.Peer, r.SustainableRate, r.Notes = nil, nil, nil, nil, nil, 0, nil
	r.Floe = floeRun(2000, 2.05, 140)
	r.Floe.Workload, r.Floe.E2E, r.Floe.Consumed = WorkloadProduce, nil, 0
	r.Limits.StoreFlush = nil
	r.Goals = EvaluateGoals(r)
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./bench -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the rendering; got:\n%s", path, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	for name, r := range map[string]*Report{"report_sweep.golden.md": fixtureReport(), "report_single.golden.md": singleReport()} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := r.WriteMarkdown(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, name, b.Bytes())
		})
	}
}

func TestMarkdownContent(t *testing.T) {
	var b bytes.Buffer
	if err := fixtureReport().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| figure | floe | limit | floe ÷ limit | jetstream | floe ÷ jetstream |",
		"| throughput, MB/s | 29.7 | 335 (raw PUT) | 0.09 | 29.7 | 1.00 |",
		"| produce latency p99, ms | 288 | 261 (floor) | 1.10 | 5.40 | 53.33 |",
		"**PASS** one PUT and at most one metadata commit per flush",
		"**FAIL** ingest ≥ 70% of the raw PUT throughput",
		"## Sweep",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	for _, r := range []*Report{fixtureReport(), singleReport(), {}} {
		var b bytes.Buffer
		if err := r.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&b)
		polylines := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("SVG is not well-formed XML: %v", err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
				polylines++
			}
		}
		if want := len(r.Chart().Series); polylines != want {
			t.Fatalf("%d polylines, want one per series (%d)", polylines, want)
		}
	}
	c := fixtureReport().Chart()
	if c.XNines || len(c.Series) != 6 || c.Series[0].Name != "floe produce p50" || !c.Series[3].Dashed {
		t.Fatalf("sweep chart: %+v", c)
	}
	if c := singleReport().Chart(); !c.XNines || len(c.Series) != 1 {
		t.Fatalf("single-run chart should be floe's produce distribution: %+v", c)
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	r := fixtureReport()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Floe.Produce != r.Floe.Produce || back.Limits.Commit.Latency != r.Limits.Commit.Latency || len(back.Goals) != len(r.Goals) {
		t.Fatalf("round trip lost figures")
	}
	if !strings.Contains(b.String(), `"p99_ms": 288`) {
		t.Fatalf("JSON lacks p99_ms:\n%s", b.String()[:400])
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1234567: "1,234,567", 12.34: "12.3", 1.234: "1.23", 0.001234: "0.0012", -2500: "-2,500"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
