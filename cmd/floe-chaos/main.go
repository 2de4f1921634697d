// Command floe-chaos is floe's fault campaign (docs/chaos.md).
//
//	floe-chaos run [flags]     runs, faults injected, each history checked; a table
//	floe-chaos check [-async-loss] FILE...   checks histories written by failed runs
//
// It exits 1 when a run shows an anomaly, 2 on a usage or harness error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/floe-broker/floe/chaos"
	"github.com/floe-broker/floe/chaos/history"
	"github.com/floe-broker/floe/internal/services"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errAnomaly is a campaign or history with anomalies.
var errAnomaly = errors.New("anomalies found")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "floe-chaos: usage: floe-chaos run [flags] | floe-chaos check [-async-loss] FILE...")
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runCampaign(ctx, args[1:], stdout, stderr)
	case "check":
		err = runCheck(args[1:], stdout, stderr)
	default:
		err = fmt.Errorf("unknown command %q: run or check", args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errAnomaly):
		fmt.Fprintln(stderr, "floe-chaos:", err)
		return 1
	default:
		fmt.Fprintln(stderr, "floe-chaos:", err)
		return 2
	}
}

func runCheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe-chaos check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	async := fs.Bool("async-loss", false, "the history is of a -failover-async run: measure the promotion's loss and classify its after-effects")
	if err := fs.Parse(args); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		return errors.New("check takes history files")
	}
	t := newTable()
	var bad []string
	for _, path := range args {
		r, err := checkFile(path, *async)
		if err != nil {
			return err
		}
		t.add(r, nil)
		if !r.Valid() {
			bad = append(bad, path)
			for _, a := range r.Examples {
				fmt.Fprintln(stdout, path+":", a)
			}
		}
	}
	t.print(stdout, len(args))
	if len(bad) > 0 {
		return fmt.Errorf("%w in %v", errAnomaly, bad)
	}
	return nil
}

func checkFile(path string, async bool) (*history.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ops, err := history.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if async {
		return history.CheckAsyncLoss(ops, chaos.PGFailover), nil
	}
	return history.Check(ops), nil
}

func runCampaign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe-chaos run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := chaos.DefaultConfig()
	exe := fs.String("floe", filepath.Join(services.RepoRoot(), "bin", "floe"), "the floe binary the agents and compactor run")
	runs := fs.Int("runs", 1, "runs at most")
	budget := fs.Duration("budget", 0, "start no run that would end past this much time, judged by the last run's (0: no bound)")
	seed := fs.Uint64("seed", 0, "seed of the first run (each next run adds 1; 0: from the clock)")
	faults := fs.String("faults", "all", "comma-separated fault kinds, all, or none (with -netns, the network partitions are added)")
	verbose := fs.Bool("v", false, "log the harness's progress and warnings")
	fs.IntVar(&cfg.Agents, "agents", cfg.Agents, "agents")
	fs.BoolVar(&cfg.Compactor, "compactor", cfg.Compactor, "start two compactor replicas and check the table")
	fs.BoolVar(&cfg.Failover, "failover", cfg.Failover, "run PostgreSQL with a synchronous standby; half-way through the faults kill the primary and promote the standby")
	fs.BoolVar(&cfg.FailoverAsync, "failover-async", cfg.FailoverAsync, "as -failover with an asynchronous standby: the acknowledged sends the promotion lost are counted as async-loss (allowed for asynchronous replication), with their window")
	fs.BoolVar(&cfg.Netns, "netns", cfg.Netns, "put each agent in a network namespace of its own and add the network partitions to the faults (root; ip)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "faults and produce of one run")
	fs.IntVar(&cfg.MaxSends, "max-sends", cfg.MaxSends, "sends per producer and run at most")
	fs.DurationVar(&cfg.Retention, "retention", cfg.Retention, "the topic's retention.ms while the faults run (0: the default, 7 days); set to for ever when they end")
	fs.DurationVar(&cfg.RawRetention, "retention-raw", cfg.RawRetention, "give the topic retention.raw.ms instead (its reads below the raw log start come from the table)")
	fs.StringVar(&cfg.OutDir, "out", cfg.OutDir, "folder of the failed runs' histories, seeds and logs")
	fs.BoolVar(&cfg.Keep, "keep", cfg.Keep, "write every run's history, seed and logs under -out, not only a failed run's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Exe = *exe
	if _, err := os.Stat(cfg.Exe); err != nil {
		return fmt.Errorf("no floe binary (make build): %w", err)
	}
	if *faults == "none" {
		cfg.Faults = nil
	} else {
		var err error
		if cfg.Faults, err = chaos.ParseFaults(*faults); err != nil {
			return err
		}
	}
	if *verbose {
		cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	start := time.Now()
	t := newTable()
	failed := 0
	n := 0
	var last time.Duration
	for ; n < *runs && ctx.Err() == nil; n++ {
		if *budget > 0 && n > 0 && time.Since(start)+last > *budget {
			break
		}
		cfg.Seed = *seed + uint64(n)
		fmt.Fprintf(stdout, "run %d: seed %d\n", n+1, cfg.Seed)
		res, err := chaos.Run(ctx, cfg)
		if err != nil {
			return fmt.Errorf("run %d (seed %d): %w", n+1, cfg.Seed, err)
		}
		last = res.Elapsed
		t.add(res.Report, res.Invariants)
		t.ops["postgres commit answers withheld"] += int(res.Withheld)
		t.ops["s3 writes applied, answered 500"] += int(res.AppliedErrors)
		if len(cfg.Faults) > 0 {
			t.faultTime += cfg.Duration
		}
		verdict := "ok"
		if res.Failed() {
			failed++
			verdict = fmt.Sprintf("FAILED: anomalies %v invariants %v, history %s", res.Report.Anomalies, res.Invariants, res.HistoryPath)
		}
		if cfg.FailoverAsync {
			l := res.AsyncLoss
			fmt.Fprintf(stdout, "run %d: async-loss: %d acknowledged sends lost, acknowledged within %v before the primary was killed; %d unacknowledged read values lost; after-effects %v\n",
				n+1, l.Lost, l.Window.Round(time.Millisecond), l.LostRead, l.AfterEffects)
		}
		t.ops["offsets deleted by retention"] += int(res.RetentionMoved)
		for k, v := range res.Exits {
			t.exits[k] += v
		}
		if res.FailoverToAck > 0 {
			fmt.Fprintf(stdout, "run %d: failover: first acknowledged send %v after the primary was killed\n", n+1, res.FailoverToAck.Round(time.Millisecond))
		}
		if len(res.Exits) > 0 {
			fmt.Fprintf(stdout, "run %d: floe processes that exited on their own (restarted by the driver): %v\n", n+1, res.Exits)
		}
		fmt.Fprintf(stdout, "run %d: seed %d, %d ops, %d faults, %v (after the faults:%s): %s\n", n+1, cfg.Seed, res.Report.Ops,
			sum(res.Report.Faults), res.Elapsed.Round(time.Second), phases(res.Phases), verdict)
	}
	t.print(stdout, n)
	fmt.Fprintf(stdout, "elapsed %v\n", time.Since(start).Round(time.Second))
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d runs failed (histories under %s)", errAnomaly, failed, n, cfg.OutDir)
	}
	return ctx.Err()
}

func phases(ps []chaos.Phase) string {
	s := ""
	for _, p := range ps {
		s += fmt.Sprintf(" %s %v", p.Name, p.Took)
	}
	return s
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// table sums reports over runs.
type table struct {
	faults, ops, anomalies, invariants map[string]int
	exits                              map[string]int // floe processes that exited on their own
	faultTime                          time.Duration
	asyncWindow                        time.Duration // the widest async-loss window
	invariantsChecked                  bool          // by runs, not by check
}

func newTable() *table {
	return &table{faults: map[string]int{}, ops: map[string]int{}, anomalies: map[string]int{}, invariants: map[string]int{}, exits: map[string]int{}}
}

func (t *table) add(r *history.Report, inv map[string]int) {
	for k, v := range r.Faults {
		t.faults[k] += v
	}
	for k, v := range r.Sends {
		t.ops["send "+k] += v
	}
	t.ops["read"] += r.Reads
	t.ops["table row"] += r.TableRows
	t.ops["group redelivered (allowed)"] += r.Redelivered
	t.ops["group zombie deliveries (allowed)"] += r.StaleDeliveries
	t.ops["history ops"] += r.Ops
	for k, v := range r.Trimmed {
		t.ops["trimmed by retention before read (allowed): "+k] += v
	}
	if l := r.AsyncLoss; l != nil {
		t.ops["async-loss: acknowledged sends lost (allowed: asynchronous replication)"] += l.Lost
		t.ops["async-loss: unacknowledged read values lost"] += l.LostRead
		for k, v := range l.AfterEffects {
			t.ops["async-loss after-effect: "+k] += v
		}
		t.asyncWindow = max(t.asyncWindow, l.Window)
	}
	for k, v := range r.Anomalies {
		t.anomalies[k] += v
	}
	if inv != nil {
		t.invariantsChecked = true
	}
	for k, v := range inv {
		t.invariants[k] += v
	}
}

func (t *table) print(w io.Writer, runs int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "runs\t%d\n", runs)
	if t.faultTime > 0 {
		fmt.Fprintf(tw, "time under faults\t%v\n", t.faultTime)
	}
	if t.asyncWindow > 0 {
		fmt.Fprintf(tw, "async-loss window (widest)\t%v\n", t.asyncWindow.Round(time.Millisecond))
	}
	for _, s := range []struct {
		title string
		m     map[string]int
	}{{"fault", t.faults}, {"operations", t.ops}, {"anomaly", t.anomalies}, {"invariant violated", t.invariants}, {"process exited on its own", t.exits}} {
		if (s.title == "invariant violated" || s.title == "process exited on its own") && !t.invariantsChecked {
			continue
		}
		if len(s.m) == 0 {
			fmt.Fprintf(tw, "%s\tnone\n", s.title)
			continue
		}
		keys := make([]string, 0, len(s.m))
		for k := range s.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", s.title, k, s.m[k])
		}
	}
	_ = tw.Flush()
}
