package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
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
// workload template, closed-loop (max ingest), then open-loop at half of
// its own maximum (produce p99, CPU per MiB), then a catch-up read.
type CompareConfig struct {
	// Run is the template; its Topic is a prefix, its Rate and Workload
	// are set per step.
	Run      RunConfig
	Targets  []CompareTarget
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
	Half   RunResult `json:"half"`
	// Catchup is absent when the catch-up was not run.
	Catchup *RunResult `json:"catchup,omitempty"`
}

// CompareReport is a comparison's outcome.
type CompareReport struct {
	Started time.Time    `json:"started"`
	Host    Host         `json:"host"`
	Command string       `json:"command,omitempty"`
	Run     RunConfig    `json:"-"`
	Rows    []CompareRow `json:"rows"`
}

// RunCompare runs the comparison, one system after the other.
func RunCompare(ctx context.Context, cfg CompareConfig) (*CompareReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &CompareReport{Started: time.Now().UTC().Truncate(time.Second), Host: hostInfo(), Command: cfg.Command, Run: cfg.Run}
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
		if row.Half, err = run(t, WorkloadProduce, math.Round(row.Max.RecordsPerSec/2)); err != nil {
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
	fmt.Fprintln(w, "| system | max ingest (rec/s) | max ingest (MB/s) | produce p99 at half (ms) | server CPU per MiB at half (ms) | catch-up read (MB/s) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, row := range r.Rows {
		catchup := "–"
		if row.Catchup != nil && row.Catchup.Catchup != nil {
			catchup = fmt.Sprintf("%.1f", row.Catchup.Catchup.ReadMBPerSec)
		}
		cpu := "–"
		if row.Half.Cost.CPUMsPerMiB > 0 {
			cpu = fmt.Sprintf("%.1f", row.Half.Cost.CPUMsPerMiB)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.1f | %.1f | %s | %s |\n", row.Label, row.Max.RecordsPerSec, row.Max.MBPerSec,
			row.Half.Produce.P99Ms, cpu, catchup)
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
