package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"
)

// CompareTarget is one system of a side-by-side comparison.
type CompareTarget struct {
	// System is the system, or nil with Open.
	System System
	// Open, optional, starts the system when its turn comes and returns
	// it with its stop, called once its row is measured: a peer broker
	// runs only while it is measured.
	Open func(context.Context) (System, func(), error)
	// Label describes it in the table ("floe over Kafka", ...).
	Label string
	// BeforeRead, optional, runs between a catch-up's phases (floe:
	// restart the agents so that their caches are cold).
	BeforeRead func(context.Context) error
}

// CompareConfig is a side-by-side comparison: every target runs the same
// workload template, closed-loop (max ingest), then open-loop runs down
// from that figure until one is sustained (its maximum sustainable rate),
// then open-loop at half of that (produce p99, CPU per MiB), then a
// catch-up read.
//
// Half of the closed-loop figure is not half of the maximum: the closed
// loop sends requests as large as Run.MaxBatch allows, while the open-loop
// producers send what falls due each tick, which costs every process on
// the machine (harness, broker, its stores) more per record. On a 2-core
// machine half of the closed-loop figure is about all the open-loop
// workload can take, and its p99 is that of a saturated machine.
type CompareConfig struct {
	// Run is the template; its Topic is a prefix, its Rate and Workload
	// are set per step.
	Run RunConfig
	// MaxP99 is the produce p99 a rate must stay within to count as
	// sustained (RunResult.Sustained); zero means 2 s, the sweep's.
	MaxP99  time.Duration
	Targets []CompareTarget
	// Probe, optional, measures each floe row's floor bound
	// (compare_bound.go).
	Probe    *CompareProbe
	Command  string
	Progress *Progress
	Logger   *slog.Logger
}

func (c CompareConfig) validate() error {
	if len(c.Targets) == 0 {
		return errors.New("bench: CompareConfig.Targets is empty")
	}
	for i, t := range c.Targets {
		if (t.System == nil) == (t.Open == nil) {
			return fmt.Errorf("bench: CompareConfig.Targets[%d] needs exactly one of System and Open", i)
		}
	}
	return nil
}

// CompareRow is one system's figures.
type CompareRow struct {
	System string    `json:"system"`
	Label  string    `json:"label"`
	Max    RunResult `json:"max"`
	// Search are the open-loop runs from searchStart of the closed-loop
	// figure down, the last the first sustained; SustainedRate is its
	// rate (zero when none was).
	Search        []RunResult `json:"search"`
	SustainedRate float64     `json:"sustained_rate"`
	Half          RunResult   `json:"half"`
	// Catchup is absent when the catch-up was not run.
	Catchup *RunResult `json:"catchup,omitempty"`
	// Bound is the floor bound of a floe row (nil for other systems or
	// without a probe).
	Bound *FloorBound `json:"bound,omitempty"`
}

// CompareReport is a comparison's outcome.
type CompareReport struct {
	Started time.Time `json:"started"`
	Host    Host      `json:"host"`
	Command string    `json:"command,omitempty"`
	Run     RunConfig `json:"-"`
	// MaxP99 is the sustained runs' p99 bound.
	MaxP99 time.Duration `json:"max_p99_ns"`
	Rows   []CompareRow  `json:"rows"`
}

// RunCompare runs the comparison, one system after the other.
func RunCompare(ctx context.Context, cfg CompareConfig) (*CompareReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &CompareReport{Started: time.Now().UTC().Truncate(time.Second), Host: hostInfo(), Command: cfg.Command, Run: cfg.Run}
	maxP99 := cfg.MaxP99
	if maxP99 <= 0 {
		maxP99 = 2 * time.Second
	}
	rep.MaxP99 = maxP99
	seq := 0
	run := func(t CompareTarget, w Workload, rate float64) (RunResult, error) {
		seq++
		rc := cfg.Run
		rc.Workload, rc.Rate = w, rate
		rc.Topic = fmt.Sprintf("%s-%d-%d", cfg.Run.Topic, time.Now().Unix(), seq)
		rc.Progress, rc.Logger, rc.BeforeRead = cfg.Progress, cfg.Logger, t.BeforeRead
		if _, batched := t.System.(*FloeSystem); !batched {
			// Record-by-record clients batch themselves: the harness's
			// batching tick would only delay them.
			rc.Tick = min(rc.Tick, time.Millisecond)
		}
		cfg.Progress.Note("%s: %s at %s", t.Label, w, rateLabel(rate))
		r, err := Run(ctx, t.System, rc)
		if d, ok := t.System.(TopicDropper); ok {
			// Measured: its data only fills the disk now.
			if derr := d.DropTopic(ctx, rc.Topic); derr != nil && cfg.Logger != nil {
				cfg.Logger.Warn("bench: topic of a finished run left behind", "topic", rc.Topic, "err", derr)
			}
		}
		if err != nil {
			return r, fmt.Errorf("bench: %s %s run: %w", t.System.Name(), w, err)
		}
		return r, nil
	}
	measure := func(t CompareTarget) (row CompareRow, err error) {
		if t.Open != nil {
			sys, stop, err := t.Open(ctx)
			if err != nil {
				return row, err
			}
			defer stop()
			t.System = sys
		}
		row = CompareRow{System: t.System.Name(), Label: t.Label}
		if row.Max, err = run(t, WorkloadProduce, 0); err != nil {
			return row, err
		}
		if row.Max.RecordsPerSec <= 0 {
			return row, fmt.Errorf("bench: %s acknowledged nothing at full speed (%s)", t.Label, row.Max.FirstError)
		}
		if row.Search, row.SustainedRate, err = searchSustained(row.Max.RecordsPerSec, maxP99, func(rate float64) (RunResult, error) {
			return run(t, WorkloadProduce, rate)
		}); err != nil {
			return row, err
		}
		half := row.SustainedRate / 2
		if half == 0 { // none sustained: half of the lowest tried (the table says so)
			half = row.Max.RecordsPerSec / 2
			if n := len(row.Search); n > 0 {
				half = row.Search[n-1].TargetRate / 2
			}
		}
		if row.Half, err = run(t, WorkloadProduce, math.Round(half)); err != nil {
			return row, err
		}
		if row.Bound, err = cfg.Probe.probeBound(ctx, int(row.Half.Cost.MeanFlushBytes)); err != nil {
			return row, err
		}
		if cfg.Run.BacklogBytes > 0 {
			c, err := run(t, WorkloadCatchup, 0)
			if err != nil {
				return row, err
			}
			row.Catchup = &c
		}
		return row, nil
	}
	for _, t := range cfg.Targets {
		row, err := measure(t)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// WriteMarkdown renders the side-by-side table.
func (r *CompareReport) WriteMarkdown(w io.Writer) error {
	rc := r.Run
	fmt.Fprintf(w, "## Side by side (%s, %d CPUs)\n\n", r.Host.OS, r.Host.CPUs)
	if r.Command != "" {
		fmt.Fprintf(w, "`%s`\n\n", r.Command)
	}
	fmt.Fprintf(w, "%d partitions, %d producers, %d B records, %s per run after %s of warm-up; catch-up backlog %s, read by %d consumer(s).\n\n",
		rc.Partitions, rc.Producers, rc.RecordSize, rc.Duration, rc.Warmup, byteSize(float64(rc.BacklogBytes)), rc.Consumers)
	fmt.Fprintln(w, "| system | max ingest, closed loop (rec/s) | max ingest (MB/s) | max sustained, open loop (rec/s) | produce p99 at half of it (ms) | p99 ÷ floor bound | server CPU per MiB at half (ms) | machine CPU busy at half | catch-up read (MB/s) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, row := range r.Rows {
		catchup := "–"
		if row.Catchup != nil && row.Catchup.Catchup != nil {
			catchup = fmt.Sprintf("%.1f", row.Catchup.Catchup.ReadMBPerSec)
		}
		cpu := "–"
		if row.Half.Cost.CPUMsPerMiB > 0 {
			cpu = fmt.Sprintf("%.1f", row.Half.Cost.CPUMsPerMiB)
		}
		sustained := "none sustained"
		if row.SustainedRate > 0 {
			sustained = fmt.Sprintf("%.0f", row.SustainedRate)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.1f | %s | %.1f | %s | %s | %s | %s |\n", row.Label, row.Max.RecordsPerSec, row.Max.MBPerSec,
			sustained, row.Half.Produce.P99Ms, boundCell(row), cpu, busyCell(row.Half), catchup)
	}
	fmt.Fprintf(w, "\nSustained: acknowledged at least %.0f%% of the offered rate within the window, with a produce p99 of at most %s; the search runs from %.0f%% of the closed-loop figure down by a factor of %.2f, at most %d runs. Machine CPU busy: every process on the host (ours: the harness, the servers and their stores).\n",
		100*SustainedShare, r.MaxP99, 100*searchStart, searchFactor, searchTries)
	fmt.Fprintln(w, "Floor bound (floe rows): linger + 1.2 × (raw PUT p99 of the row's mean flush + raw commit p99), probed on the same store and metadata database right after the row; a ratio ≤ 1 is within it.")
	for _, row := range r.Rows {
		if row.Half.Breakdown != nil {
			var b strings.Builder
			writeBreakdown(&b, row.Half)
			fmt.Fprintf(w, "%s", strings.Replace(b.String(), "## Where", "### "+row.Label+": where", 1))
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *CompareReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// The descending search of the open-loop maximum (CompareConfig).
const (
	searchStart  = 0.8
	searchFactor = 0.8
	searchTries  = 6
)

// searchSustained runs open-loop rates from searchStart of closedLoop
// down by searchFactor until one is sustained (at most searchTries runs):
// the runs, and the sustained rate (zero when none was).
func searchSustained(closedLoop float64, maxP99 time.Duration, run func(rate float64) (RunResult, error)) ([]RunResult, float64, error) {
	var runs []RunResult
	rate := math.Round(closedLoop * searchStart)
	for range searchTries {
		if rate < 1 {
			break
		}
		r, err := run(rate)
		if err != nil {
			return runs, 0, err
		}
		runs = append(runs, r)
		if r.Sustained(maxP99) {
			return runs, rate, nil
		}
		rate = math.Round(rate * searchFactor)
	}
	return runs, 0, nil
}
