// Package chaos is floe's fault campaign (docs/chaos.md): it starts a
// deployment (PostgreSQL, an S3 server, proxies in front of both, several
// agents, a compactor), runs producers, fetchers, subscribers and group
// members against it while it injects faults, ends with a final read of
// every partition and a scan of the table, and checks the history
// (package history) and the stores' invariants.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/chaos/history"
	"github.com/floe-broker/floe/metadata"
)

// Config configures one run.
type Config struct {
	// Exe is the floe binary.
	Exe string
	// Agents is the number of agents; Compactor starts two compactor
	// replicas (and the table is checked).
	Agents    int
	Compactor bool
	// Partitions of the topic.
	Partitions int32
	// Duration is how long faults are injected (and producers send).
	Duration time.Duration
	// MaxSends bounds each producer's sends; MaxOps the history.
	MaxSends, MaxOps int
	// Seed draws the faults.
	Seed uint64
	// Faults are the kinds injected (none: a run without faults).
	Faults []string
	// Netns puts each agent in a network namespace of its own (root
	// only), for the network partitions (NetFaults).
	Netns bool
	// Failover runs PostgreSQL with a synchronous standby and, half-way
	// through the faults, kills the primary and promotes the standby;
	// FailoverAsync does the same with an asynchronous standby, whose
	// loss window is measured (Result.AsyncLoss).
	Failover, FailoverAsync bool
	// Retention is the topic's retention.ms while the faults run (0: the
	// default, 7 days); it is set to -1 (for ever) when they end, for the
	// final read. RawRetention, instead, gives the topic retention.raw.ms
	// (its reads below the raw log start come from the table).
	Retention, RawRetention time.Duration
	// OutDir receives a failed run's history, seed and logs; with Keep,
	// every run's.
	OutDir string
	Keep   bool
	Log    *slog.Logger
	// keepOps, for tests, receives the history.
	keepOps func([]history.Op)
	// breakRetention, for tests, moves partition 0's log start to its
	// head half-way through the faults (DeleteRecords), as a retention rule
	// ignoring retention.ms and the table's hold would.
	breakRetention bool
}

// DefaultConfig is a run of 30 s with three agents and a compactor.
func DefaultConfig() Config {
	return Config{Agents: 3, Compactor: true, Partitions: 4, Duration: 30 * time.Second, MaxSends: 3000,
		MaxOps: 2_000_000, Faults: AllFaults, Retention: 5 * time.Second, OutDir: "chaos-out", Log: slog.New(slog.DiscardHandler)}
}

func (c Config) validate() error {
	switch {
	case c.Exe == "":
		return errors.New("chaos: Config.Exe (the floe binary) is empty")
	case c.Agents < 1:
		return fmt.Errorf("chaos: Config.Agents %d must be at least 1", c.Agents)
	case c.Partitions < 1:
		return fmt.Errorf("chaos: Config.Partitions %d must be at least 1", c.Partitions)
	case c.Duration <= 0:
		return fmt.Errorf("chaos: Config.Duration %v must be positive", c.Duration)
	case c.MaxSends < 1 || c.MaxOps < 1:
		return fmt.Errorf("chaos: Config.MaxSends %d and MaxOps %d must be positive", c.MaxSends, c.MaxOps)
	case c.Retention < 0 || c.RawRetention < 0:
		return fmt.Errorf("chaos: Config.Retention %v and RawRetention %v must not be negative", c.Retention, c.RawRetention)
	}
	return nil
}

// Result is one run's outcome.
type Result struct {
	Seed   uint64
	Report *history.Report
	// Invariants counts the stores' violations by kind (see invariants.go).
	Invariants map[string]int
	// HistoryPath is where a failed run's history was written.
	HistoryPath string
	Elapsed     time.Duration
	// Withheld counts the commit answers the PostgreSQL proxy withheld,
	// AppliedErrors the S3 writes it applied and answered as failed.
	Withheld, AppliedErrors int64
	// FailoverToAck is the time from the primary's kill to the first
	// acknowledged send after it (0: no failover, or no ack after it).
	FailoverToAck time.Duration
	// AsyncLoss, with Config.FailoverAsync, is what the promotion of the
	// asynchronous standby lost and its after-effects (not anomalies:
	// asynchronous replication allows them; history.CheckAsyncLoss).
	AsyncLoss history.AsyncLoss
	// RetentionMoved is how far retention moved the log starts during the
	// run (the last LogStart sample of each partition, summed; the raw log
	// starts with Config.RawRetention).
	RetentionMoved int64
	// Phases is how long the steps after the faults took: heal, final
	// read, group drain, table, invariants.
	Phases []Phase
	// Exits counts, by process (agent-0, compactor-1), the times a floe
	// process exited on its own (not killed by a fault) and was started
	// again by the driver (deploy.go): a floe process must ride out every
	// fault, so any exit is a finding (see its log in the kept run).
	Exits map[string]int
}

// Phase is one step's duration.
type Phase struct {
	Name string
	Took time.Duration
}

// Failed reports whether the run found anything wrong.
func (r *Result) Failed() bool { return !r.Report.Valid() || len(r.Invariants) > 0 }

const topicName = "chaos"

// Run runs one campaign run. Its error is the harness's own failure (the
// deployment did not start or recover); anomalies are in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	log := cfg.Log
	compactors := 0
	if cfg.Compactor {
		compactors = 2
	}
	standby := NoStandby
	switch {
	case cfg.FailoverAsync:
		standby = AsyncStandby
	case cfg.Failover:
		standby = SyncStandby
	}
	d, err := Start(ctx, cfg.Exe, cfg.Agents, compactors, cfg.Netns, standby, log)
	if err != nil {
		return nil, err
	}
	defer d.RemoveDir()
	defer d.Stop()
	log.Info("chaos: deployment started", "took", time.Since(start).Round(time.Millisecond))
	res := &Result{Seed: cfg.Seed, Invariants: map[string]int{}}
	rec := history.NewRecorder(cfg.MaxOps)
	w := &workload{clients: d.Clients, rec: rec, topic: topicName, partitions: cfg.Partitions, maxSends: cfg.MaxSends,
		log: log, crash: make(chan struct{})}
	tcfg := map[string]string{metadata.ConfigIcebergEnabled: "false"}
	if cfg.Compactor {
		tcfg = map[string]string{metadata.ConfigIcebergLag: "1s"}
	}
	retention := cfg.retention(tcfg)
	if err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
		_, err := d.Clients[0].CreateTopic(ctx, topicName, cfg.Partitions, tcfg)
		return err
	}); err != nil {
		return nil, fmt.Errorf("chaos: create topic: %w", err)
	}

	readCtx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watching sync.WaitGroup
	if retention > 0 {
		watching.Go(func() { w.watchRetention(watchCtx, d, cfg.Compactor) })
	}
	prodCtx, stopProducers := context.WithTimeout(ctx, cfg.Duration)
	defer stopProducers()
	var producers, readers sync.WaitGroup
	if cfg.breakRetention {
		producers.Go(func() { w.breakRetention(prodCtx, cfg.Duration/2) })
	}
	for i, kind := range []string{"plain", "pipelined", "idempotent"} {
		producers.Go(func() { w.producer(prodCtx, fmt.Sprintf("%s%d", kind, i), kind) })
	}
	readers.Go(func() { w.fetcher(readCtx, "fetch0", 0) })
	readers.Go(func() { w.subscriber(readCtx, "sub0", 1) })
	stopMembers := make(chan struct{})
	var members sync.WaitGroup
	for i := range 3 {
		members.Go(func() { w.member(readCtx, fmt.Sprintf("m%d", i), i, stopMembers) })
	}
	if len(cfg.Faults) > 0 || standby != NoStandby {
		f := &faulter{d: d, w: w, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), kinds: cfg.Faults}
		if standby != NoStandby {
			f.failoverAt = time.Now().Add(cfg.Duration / 2)
		}
		if cfg.Netns {
			f.kinds = append(append([]string(nil), f.kinds...), NetFaults...)
		}
		f.run(prodCtx)
	} else {
		<-prodCtx.Done()
	}
	healCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	mark := time.Now()
	phase := func(name string) {
		res.Phases = append(res.Phases, Phase{name, time.Since(mark).Round(100 * time.Millisecond)})
		mark = time.Now()
	}
	if err := d.Heal(healCtx); err != nil {
		return nil, err
	}
	producers.Wait()
	if cfg.Retention > 0 && cfg.RawRetention == 0 {
		// Keep what is left for the final read.
		if err := retry(healCtx, 30*time.Second, func(ctx context.Context) error {
			_, err := d.Clients[0].Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: topicName,
				Set: map[string]string{metadata.ConfigRetentionMs: "-1"}})
			return err
		}); err != nil {
			return nil, fmt.Errorf("chaos: retention for ever: %w", err)
		}
	}
	phase("heal")

	hws, err := w.finalRead(healCtx)
	if err != nil {
		return nil, err
	}
	phase("final read")
	if lagging := w.drainGroup(healCtx, hws); lagging > 0 {
		res.Invariants[GroupNotDrained] += lagging
	}
	close(stopMembers)
	members.Wait()
	stopReaders()
	readers.Wait()
	phase("group drain")
	if cfg.Compactor {
		if err := w.scanTable(healCtx, d, hws); err != nil {
			return nil, err
		}
		phase("table")
	}
	stopWatch()
	watching.Wait()
	checkInvariants(healCtx, d, cfg.Compactor, res.Invariants)
	phase("invariants")

	res.Withheld, res.AppliedErrors = d.PGProxy.Withheld.Load(), d.S3Proxy.Applied.Load()
	ops := rec.Ops()
	res.FailoverToAck = failoverToAck(ops)
	if n := retentionPastHold(ops, cfg.Compactor, cfg.RawRetention > 0); n > 0 {
		res.Invariants[RetentionPastHold] += n
	}
	res.RetentionMoved = retentionMoved(ops)
	if n := retentionWithin(ops, retention, cfg.RawRetention > 0); n > 0 && retention > 0 {
		res.Invariants[RetentionWithin] += n
	}
	if cfg.keepOps != nil {
		cfg.keepOps(ops)
	}
	if cfg.FailoverAsync {
		res.Report = history.CheckAsyncLoss(ops, PGFailover)
		res.AsyncLoss = *res.Report.AsyncLoss
	} else {
		res.Report = history.Check(ops)
	}
	res.Elapsed = time.Since(start)
	res.Exits = d.exits()
	if res.Failed() || cfg.Keep {
		res.HistoryPath, err = writeFailure(cfg, d, ops, res)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// retention sets the topic's retention in tcfg and returns the one its
// raw files follow (0: the default, longer than any run).
func (c Config) retention(tcfg map[string]string) time.Duration {
	switch {
	case c.RawRetention > 0:
		tcfg[metadata.ConfigRetentionRawMs] = strconv.FormatInt(c.RawRetention.Milliseconds(), 10)
		return c.RawRetention
	case c.Retention > 0:
		tcfg[metadata.ConfigRetentionMs] = strconv.FormatInt(c.Retention.Milliseconds(), 10)
		return c.Retention
	}
	return 0
}

// retry calls fn until it succeeds or within elapses.
func retry(ctx context.Context, within time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		err := fn(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return err
		}
	}
}

// finalRead reads every partition from its log start to its high
// watermark and returns the watermarks.
func (w *workload) finalRead(ctx context.Context) (map[int32]int64, error) {
	hws := map[int32]int64{}
	for p := range w.partitions {
		var start, hw, next int64 = 0, -1, 0
		i := 0
		err := retry(ctx, 2*time.Minute, func(ctx context.Context) error {
			for hw < 0 || next < hw {
				i++
				resp, err := w.client(i).Fetch(ctx, w.topic, p, next, 1<<20, 0)
				if ls, ok := logStartOf(err); ok && ls > next {
					start, next = ls, ls // retention deleted it meanwhile
					continue
				}
				if err != nil {
					return err
				}
				if hw < 0 {
					start, hw, next = resp.GetLogStartOffset(), resp.GetHighWatermark(), resp.GetLogStartOffset()
					continue
				}
				for _, r := range resp.GetRecords() {
					if r.GetOffset() < next || r.GetOffset() >= hw {
						continue
					}
					w.add(history.Op{Type: history.Read, Process: "final", Final: true, Partition: p, Offset: r.GetOffset(),
						Key: string(r.GetKey()), Value: string(r.GetValue())})
					next = r.GetOffset() + 1
				}
				if resp.GetNextOffset() > next && len(resp.GetRecords()) == 0 {
					return fmt.Errorf("chaos: partition %d: fetch at %d answered nothing, next %d", p, next, resp.GetNextOffset())
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("chaos: final read of partition %d: %w", p, err)
		}
		w.add(history.Op{Type: history.FinalRead, Partition: p, From: start, Offset: hw})
		hws[p] = hw
	}
	return hws, nil
}

// drainGroup waits until the group has committed every partition up to
// its high watermark (or a minute passed) and records where it stands.
// It returns the partitions still behind.
func (w *workload) drainGroup(ctx context.Context, hws map[int32]int64) int {
	var last *floev1.DescribeGroupResponse
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := w.client(0).Groups().DescribeGroup(cctx, &floev1.DescribeGroupRequest{Group: Group})
		cancel()
		if err == nil {
			last = resp
			done := len(resp.GetPartitions()) == int(w.partitions)
			for _, pl := range resp.GetPartitions() {
				done = done && pl.GetCommitted() >= hws[pl.GetPartition()]
			}
			if done {
				break
			}
		}
		if !sleep(ctx, 500*time.Millisecond) {
			break
		}
	}
	behind := int(w.partitions)
	for _, pl := range last.GetPartitions() {
		if pl.GetTopic() != w.topic {
			continue
		}
		if pl.GetCommitted() >= hws[pl.GetPartition()] {
			behind--
		} else {
			w.log.Warn("chaos: group not drained", "partition", pl.GetPartition(), "committed", pl.GetCommitted(),
				"high_watermark", hws[pl.GetPartition()], "members", len(last.GetMembers()))
		}
		if pl.GetCommitted() > 0 {
			w.add(history.Op{Type: history.GroupEnd, Group: Group, Partition: pl.GetPartition(), Offset: pl.GetCommitted()})
		}
	}
	return behind
}

// writeFailure writes a failed (or kept) run's history, seed, report
// and logs under cfg.OutDir.
func writeFailure(cfg Config, d *Deployment, ops []history.Op, res *Result) (string, error) {
	dir := filepath.Join(cfg.OutDir, fmt.Sprintf("seed-%d", cfg.Seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("chaos: %w", err)
	}
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("chaos: %w", err)
	}
	err = history.Encode(f, ops)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	summary := fmt.Sprintf("seed %d\nanomalies %v\ninvariants %v\nexits %v\n", cfg.Seed, res.Report.Anomalies, res.Invariants, res.Exits)
	for _, a := range res.Report.Examples {
		summary += a.String() + "\n"
	}
	_ = os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary), 0o644)
	logs, _ := filepath.Glob(filepath.Join(d.Dir, "*.log"))
	for _, l := range logs {
		if b, rerr := os.ReadFile(l); rerr == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(l)), b, 0o644)
		}
	}
	return path, err
}

// failoverToAck is the time from the failover fault to the
// acknowledgement of the first send handed to the client after it.
func failoverToAck(ops []history.Op) time.Duration {
	var at int64
	for _, op := range ops {
		switch {
		case op.Type == history.Fault && op.Value == PGFailover:
			at = op.Time
		case at != 0 && op.Type == history.Send && op.Outcome == history.OK && op.Start > at:
			return time.Duration(op.Time - at)
		}
	}
	return 0
}
