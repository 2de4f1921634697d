package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Workload names what a run measures.
type Workload string

const (
	// WorkloadProduce produces only: produce latency, throughput, cost.
	WorkloadProduce Workload = "produce"
	// WorkloadE2E produces and consumes: adds end-to-end latency, from
	// the intended send time stamped in each record to its delivery.
	WorkloadE2E Workload = "e2e"
	// WorkloadCatchup produces a backlog as fast as it is taken, then
	// reads it all from the earliest offset: read throughput.
	WorkloadCatchup Workload = "catchup"
)

// RunConfig is one run of one workload against one system.
type RunConfig struct {
	Workload   Workload
	Topic      string
	Partitions int
	Producers  int
	Consumers  int
	RecordSize int
	// Rate is the total target in records per second; 0 runs closed-loop
	// (as fast as the producers' in-flight bounds allow).
	Rate     float64
	Warmup   time.Duration
	Duration time.Duration
	// Drain bounds the wait for answers and deliveries after the run.
	Drain time.Duration
	// MaxBatch and Tick shape the producers' requests (see GenConfig).
	MaxBatch int
	Tick     time.Duration
	// BacklogBytes is the catch-up backlog; the default, 1 GB, is larger
	// than an agent's read cache (256 MiB), so that the read measures the
	// object store reads, not the cache.
	BacklogBytes int64
	// BeforeRead, optional, runs between the catch-up's write and read
	// phases (restarting agents so that their read caches are cold).
	BeforeRead func(context.Context) error
	// Rereads, catch-up only: after the measured read, read the backlog
	// this many times more, unmeasured (profiles of the read path: a
	// read of a table's 200 MB lasts about a second).
	Rereads int
	// ServicePids, optional, are the processes the servers depend on
	// (PostgreSQL, versitygw): their CPU, children included, is reported
	// in the run's breakdown beside the harness's and the servers'.
	ServicePids []int
	// Progress, optional, shows the run's advance.
	Progress *Progress
	Logger   *slog.Logger
}

// DefaultRunConfig returns a 10 s, 1 KiB-record produce run at 2,000
// records/s over 16 partitions.
func DefaultRunConfig() RunConfig {
	return RunConfig{
		Workload: WorkloadProduce, Partitions: 16, Producers: 4, Consumers: 1, RecordSize: 1024,
		Rate: 2000, Warmup: 2 * time.Second, Duration: 10 * time.Second, Drain: 10 * time.Second,
		MaxBatch: 1000, Tick: 2 * time.Millisecond, BacklogBytes: 1e9,
	}
}

func (c RunConfig) validate() error {
	switch {
	case c.Workload != WorkloadProduce && c.Workload != WorkloadE2E && c.Workload != WorkloadCatchup:
		return fmt.Errorf("bench: RunConfig.Workload %q must be produce, e2e or catchup", c.Workload)
	case c.Topic == "":
		return errors.New("bench: RunConfig.Topic is empty")
	case c.Partitions < 1 || c.Partitions > 10000:
		return fmt.Errorf("bench: RunConfig.Partitions %d must be within [1, 10000]", c.Partitions)
	case c.Producers < 1:
		return fmt.Errorf("bench: RunConfig.Producers %d must be at least 1", c.Producers)
	case c.Consumers < 1 && c.Workload != WorkloadProduce:
		return fmt.Errorf("bench: RunConfig.Consumers %d must be at least 1", c.Consumers)
	case c.RecordSize < valueHeader || c.RecordSize > 1<<20:
		return fmt.Errorf("bench: RunConfig.RecordSize %d must be within [%d, 1 MiB]", c.RecordSize, valueHeader)
	case c.Rate < 0:
		return fmt.Errorf("bench: RunConfig.Rate %v must not be negative", c.Rate)
	case c.Workload != WorkloadCatchup && c.Duration <= 0:
		return fmt.Errorf("bench: RunConfig.Duration %v must be positive", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("bench: RunConfig.Warmup %v must not be negative", c.Warmup)
	case c.MaxBatch < 1:
		return fmt.Errorf("bench: RunConfig.MaxBatch %d must be at least 1", c.MaxBatch)
	case c.Workload == WorkloadCatchup && c.BacklogBytes < int64(c.RecordSize):
		return fmt.Errorf("bench: RunConfig.BacklogBytes %d must hold at least one record", c.BacklogBytes)
	case c.Rereads < 0 || c.Rereads > 100:
		return fmt.Errorf("bench: RunConfig.Rereads %d must be within [0, 100]", c.Rereads)
	}
	return nil
}

// Cost is what a run cost the servers over its measured window, from
// their metrics (floe) or /proc (peer).
type Cost struct {
	PUTs          float64 `json:"puts"`
	GETs          float64 `json:"gets"`
	Commits       float64 `json:"commits"`
	Flushes       float64 `json:"flushes"`
	PUTsPerSec    float64 `json:"puts_per_sec"`
	GETsPerSec    float64 `json:"gets_per_sec"`
	CommitsPerSec float64 `json:"commits_per_sec"`
	PUTsPerMB     float64 `json:"puts_per_mb"`
	GETsPerMB     float64 `json:"gets_per_mb"`
	CommitsPerMB  float64 `json:"commits_per_mb"`
	// RunPUTs, RunCommits and RunFlushes cover the whole run, warm-up and
	// drain included, so that no flush is cut in two by the window's
	// edges; PUTsPerFlush and CommitsPerFlush are their ratios.
	RunPUTs         float64 `json:"run_puts"`
	RunCommits      float64 `json:"run_commits"`
	RunFlushes      float64 `json:"run_flushes"`
	PUTsPerFlush    float64 `json:"puts_per_flush"`
	CommitsPerFlush float64 `json:"commits_per_flush"`
	MeanFlushBytes  float64 `json:"mean_flush_bytes"`
	Backpressured   float64 `json:"backpressured"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUSecPerGiB    float64 `json:"cpu_sec_per_gib"`
	CPUMsPerMiB     float64 `json:"cpu_ms_per_mib"`
	PeakRSSBytes    float64 `json:"peak_rss_bytes"`
	// ServersAlive is false when a server stopped answering during the run.
	ServersAlive bool `json:"servers_alive"`
}

// CatchupResult is the read phase of a catch-up run.
type CatchupResult struct {
	BacklogRecords int64   `json:"backlog_records"`
	BacklogBytes   int64   `json:"backlog_bytes"`
	WriteSeconds   float64 `json:"write_seconds"`
	WriteMBPerSec  float64 `json:"write_mb_per_sec"`
	ReadRecords    int64   `json:"read_records"`
	ReadSeconds    float64 `json:"read_seconds"`
	ReadMBPerSec   float64 `json:"read_mb_per_sec"`
	ReadCost       Cost    `json:"read_cost"`
	// ClientCPUMsPerMiB is the CPU the harness process (its consumers,
	// decoding and checking every batch) used per MiB read, when known.
	ClientCPUMsPerMiB float64 `json:"client_cpu_ms_per_mib,omitempty"`
}

// RunResult is what one run measured.
type RunResult struct {
	System   string   `json:"system"`
	Workload Workload `json:"workload"`
	// TargetRate is the offered load in records/s (0: closed loop).
	TargetRate float64 `json:"target_rate"`
	Seconds    float64 `json:"seconds"`
	Sent       int64   `json:"sent"`
	Acked      int64   `json:"acked"`
	Failed     int64   `json:"failed"`
	Unacked    int64   `json:"unacked"`
	Unsent     int64   `json:"unsent"`
	// RecordsPerSec and MBPerSec are acknowledged within the window.
	RecordsPerSec float64        `json:"records_per_sec"`
	MBPerSec      float64        `json:"mb_per_sec"`
	Produce       Summary        `json:"produce"`
	ProduceDist   []Point        `json:"produce_distribution,omitempty"`
	E2E           *Summary       `json:"e2e,omitempty"`
	E2EDist       []Point        `json:"e2e_distribution,omitempty"`
	Consumed      int64          `json:"consumed,omitempty"`
	Catchup       *CatchupResult `json:"catchup,omitempty"`
	Cost          Cost           `json:"cost"`
	// Breakdown is where the produce latency and the machine's CPU went
	// over the measured window (produce and e2e runs).
	Breakdown  *Breakdown `json:"breakdown,omitempty"`
	FirstError string     `json:"first_error,omitempty"`
}

// Followed reports whether the system kept up with the offered load:
// at least 90% of it acknowledged within the window, nothing failed, and
// at most 1% of the window's records left unsent. A producer whose last
// request is still being written when the schedule ends leaves the last
// tick's records (a few ms of them) unsent whatever the system: that
// boundary effect does not count as falling behind (the records are in
// the latency histogram all the same).
func (r RunResult) Followed() bool {
	if r.TargetRate <= 0 {
		return r.Failed == 0
	}
	return r.RecordsPerSec >= 0.9*r.TargetRate && r.Failed == 0 && float64(r.Unsent) <= 0.01*r.TargetRate*r.Seconds
}

// SustainedShare is the least share of an open-loop run's offered rate
// that must be acknowledged within its window for the rate to count as
// sustained: in steady state the window's acknowledgements match the
// offer (the records answered after the window's end balance those sent
// before its start), while Followed's 90% passes a system 10% short of the
// offer whose backlog, and latency, grow through the window.
const SustainedShare = 0.97

// Sustained reports whether an open-loop run held its offered rate in
// steady state: Followed, at least SustainedShare of the offer
// acknowledged within the window, and a produce p99 of at most maxP99. The
// maximum sustainable rate, whose half the headline figures are taken at,
// is the highest rate sustained.
func (r RunResult) Sustained(maxP99 time.Duration) bool {
	return r.TargetRate > 0 && r.Followed() && r.RecordsPerSec >= SustainedShare*r.TargetRate && r.Produce.P99Ms <= ms(maxP99)
}

// Run runs cfg's workload against sys.
func Run(ctx context.Context, sys System, cfg RunConfig) (RunResult, error) {
	if err := cfg.validate(); err != nil {
		return RunResult{}, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := sys.Setup(ctx, cfg.Topic, cfg.Partitions); err != nil {
		return RunResult{}, err
	}
	if cfg.Workload == WorkloadCatchup {
		return runCatchup(ctx, sys, cfg)
	}
	return runLoad(ctx, sys, cfg)
}

// openProducers opens cfg.Producers producers; close closes them.
func openProducers(ctx context.Context, sys System, n int) (ps []Producer, closeAll func(), err error) {
	closeAll = func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range ps {
			_ = p.Close(cctx)
		}
	}
	for i := range n {
		p, err := sys.NewProducer(ctx, i)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ps = append(ps, p)
	}
	return ps, closeAll, nil
}

// consumers runs n consumers of sys until stop is called, counting
// records and recording end-to-end latencies of records stamped within
// [from, to).
type consumers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	count  atomic.Int64
	bytes  atomic.Int64
	errMu  sync.Mutex
	err    error
}

func startConsumers(ctx context.Context, sys System, n int, earliest bool, e2e *Histogram, from, to time.Time, live *Counters) *consumers {
	ctx, cancel := context.WithCancel(ctx)
	c := &consumers{cancel: cancel}
	for i := range n {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			err := sys.Consume(ctx, i, n, earliest, func(v []byte) {
				c.count.Add(1)
				c.bytes.Add(int64(len(v)))
				if live != nil {
					live.Consumed.Add(1)
				}
				if e2e == nil {
					return // catch-up: counts only, no clock read per record
				}
				now := time.Now()
				if t, ok := StampOf(v); ok && !t.Before(from) && t.Before(to) {
					e2e.Record(now.Sub(t))
				}
			})
			if err != nil {
				c.errMu.Lock()
				c.err = errors.Join(c.err, err)
				c.errMu.Unlock()
			}
		}()
	}
	return c
}

func (c *consumers) stop() error {
	c.cancel()
	c.wg.Wait()
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// waitCount waits until c has consumed want records, ctx ends, or the
// count has not moved for idle.
func (c *consumers) waitCount(ctx context.Context, want int64, idle time.Duration) {
	last, lastMove := c.count.Load(), time.Now()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for c.count.Load() < want {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := c.count.Load(); n != last {
			last, lastMove = n, time.Now()
		} else if time.Since(lastMove) > idle {
			return
		}
	}
}

// statsWindow samples sys's stats at from and to, and its resident
// memory every second in between.
type statsWindow struct {
	before, after ServerStats
	errBefore     error
	errAfter      error
	// host and runtime samples at the window's edges
	hostBefore, hostAfter hostSample
	rtBefore, rtAfter     runtimeSample
	peak                  *PeakSampler
	alive                 atomic.Bool
}

func startStats(ctx context.Context, sys System) *statsWindow {
	w := &statsWindow{}
	w.alive.Store(true)
	w.peak = StartPeakSampler(time.Second, func() (float64, error) {
		st, err := sys.Stats(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.alive.Store(false)
			}
			return 0, err
		}
		m := 0.0
		for _, r := range st.RSSBytes {
			m = math.Max(m, r)
		}
		return m, nil
	})
	return w
}

// costOf turns a stats window into a Cost for bytes ingested over secs.
func costOf(before, after ServerStats, secs float64, bytes float64) Cost {
	d := after.Metrics.Sub(before.Metrics)
	c := Cost{
		PUTs:          d.Sum("floe_objectstore_requests_total", "operation", "put"),
		GETs:          d.Sum("floe_objectstore_requests_total", "operation", "get"),
		Commits:       d.Sum("floe_metadata_commits_total"),
		Flushes:       d.Sum("floe_batcher_flushes_total"),
		Backpressured: d.Sum("floe_batcher_backpressure_total"),
		CPUSeconds:    after.CPUSeconds - before.CPUSeconds,
	}
	if n := d.Sum("floe_batcher_flush_bytes_count"); n > 0 {
		c.MeanFlushBytes = d.Sum("floe_batcher_flush_bytes_sum") / n
	}
	if secs > 0 {
		c.PUTsPerSec, c.GETsPerSec, c.CommitsPerSec = c.PUTs/secs, c.GETs/secs, c.Commits/secs
	}
	if mb := bytes / 1e6; mb > 0 {
		c.PUTsPerMB, c.GETsPerMB, c.CommitsPerMB = c.PUTs/mb, c.GETs/mb, c.Commits/mb
		c.CPUSecPerGiB = c.CPUSeconds / (bytes / (1 << 30))
		c.CPUMsPerMiB = c.CPUSeconds * 1000 / (bytes / (1 << 20))
	}
	return c
}

// setRunCounts fills the whole-run counts from stats taken before the
// run's first record and after its last answer.
func (c *Cost) setRunCounts(first, last ServerStats) {
	d := last.Metrics.Sub(first.Metrics)
	c.RunPUTs = d.Sum("floe_objectstore_requests_total", "operation", "put")
	c.RunCommits = d.Sum("floe_metadata_commits_total")
	c.RunFlushes = d.Sum("floe_batcher_flushes_total")
	if c.RunFlushes > 0 {
		c.PUTsPerFlush, c.CommitsPerFlush = c.RunPUTs/c.RunFlushes, c.RunCommits/c.RunFlushes
	}
}

// runLoad runs the produce and e2e workloads.
func runLoad(ctx context.Context, sys System, cfg RunConfig) (RunResult, error) {
	res := RunResult{System: sys.Name(), Workload: cfg.Workload, TargetRate: cfg.Rate, Seconds: cfg.Duration.Seconds()}
	ps, closeAll, err := openProducers(ctx, sys, cfg.Producers)
	if err != nil {
		return res, err
	}
	defer closeAll()
	live := &Counters{}
	start := time.Now().Add(200 * time.Millisecond)
	from := start.Add(cfg.Warmup)
	to := from.Add(cfg.Duration)

	var cons *consumers
	e2e := NewHistogram()
	if cfg.Workload == WorkloadE2E {
		cons = startConsumers(ctx, sys, cfg.Consumers, true, e2e, from, to, live)
		defer cons.stop()
	}
	if cfg.Progress != nil {
		cfg.Progress.Begin(fmt.Sprintf("%s %s %s", sys.Name(), cfg.Workload, rateLabel(cfg.Rate)), start, to, live)
		defer cfg.Progress.End()
	}

	first, err := sys.Stats(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: server stats: %w", err)
	}
	w := startStats(ctx, sys)
	statsDone := make(chan struct{})
	go func() { // the window's edges, sampled on time
		defer close(statsDone)
		if sleepUntil(ctx, from) {
			w.hostBefore, w.rtBefore = sampleHost(cfg.ServicePids), sampleRuntime()
			w.before, w.errBefore = sys.Stats(ctx)
		}
		if sleepUntil(ctx, to) {
			w.hostAfter, w.rtAfter = sampleHost(cfg.ServicePids), sampleRuntime()
			w.after, w.errAfter = sys.Stats(ctx)
		}
	}()

	lat := NewHistogram()
	timing := newSendTiming()
	perRate := cfg.Rate / float64(cfg.Producers)
	results := make([]GenResult, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := Schedule{Start: start, Rate: perRate}
			if perRate > 0 { // stagger the producers within one interval
				s.Start = start.Add(time.Duration(float64(i) / float64(len(ps)) * float64(time.Second) / perRate))
			}
			results[i], errs[i] = Generate(ctx, GenConfig{
				Producer: i, Schedule: s, MeasureFrom: from, MeasureTo: to, StopAt: to,
				Drain: cfg.Drain, MaxBatch: cfg.MaxBatch, Tick: cfg.Tick, timing: timing,
			}, p, lat, live)
		}()
	}
	wg.Wait()
	<-statsDone
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	for _, r := range results {
		res.addGen(r)
		res.RecordsPerSec += float64(r.AckedInWindow)
	}
	res.RecordsPerSec /= cfg.Duration.Seconds()
	res.MBPerSec = res.RecordsPerSec * float64(cfg.RecordSize) / 1e6
	res.Produce, res.ProduceDist = lat.Summary(), lat.Distribution()

	if cons != nil {
		cons.waitCount(ctx, res.Acked, cfg.Drain)
		cerr := cons.stop()
		res.Consumed = cons.count.Load()
		s := e2e.Summary()
		res.E2E, res.E2EDist = &s, e2e.Distribution()
		if cerr != nil && res.FirstError == "" {
			res.FirstError = cerr.Error()
		}
	}
	peak, _ := w.peak.Stop()
	last, lerr := sys.Stats(ctx)
	if err := errors.Join(w.errBefore, w.errAfter, lerr); err != nil {
		return res, fmt.Errorf("bench: server stats: %w", err)
	}
	res.Cost = costOf(w.before, w.after, cfg.Duration.Seconds(), res.MBPerSec*1e6*cfg.Duration.Seconds())
	res.Cost.setRunCounts(first, last)
	res.Cost.PeakRSSBytes = peak
	res.Cost.ServersAlive = w.alive.Load()
	bd := &Breakdown{CPU: cpuUse(w.hostBefore, w.hostAfter, cfg.Duration.Seconds(), res.Cost.CPUSeconds)}
	timing.fill(bd)
	bd.agentStages(w.after.Metrics.Sub(w.before.Metrics), cfg.Duration.Seconds())
	bd.harnessRuntime(w.rtBefore, w.rtAfter)
	res.Breakdown = bd
	return res, nil
}

// runCatchup writes a backlog closed-loop, then reads it from the start.
func runCatchup(ctx context.Context, sys System, cfg RunConfig) (RunResult, error) {
	res := RunResult{System: sys.Name(), Workload: cfg.Workload}
	perProducer := cfg.BacklogBytes / int64(cfg.RecordSize) / int64(cfg.Producers)
	perProducer = max(perProducer, 1)
	ps, closeAll, err := openProducers(ctx, sys, cfg.Producers)
	if err != nil {
		return res, err
	}
	live := &Counters{}
	start := time.Now()
	if cfg.Progress != nil {
		cfg.Progress.BeginCount(fmt.Sprintf("%s catch-up: write backlog", sys.Name()), perProducer*int64(cfg.Producers), live, func() int64 { return live.Acked.Load() })
	}
	w := startStats(ctx, sys)
	before, err := sys.Stats(ctx)
	if err != nil {
		closeAll()
		w.peak.Stop()
		return res, fmt.Errorf("bench: server stats: %w", err)
	}
	lat := NewHistogram()
	far := start.Add(24 * time.Hour)
	results := make([]GenResult, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Generate(ctx, GenConfig{
				Producer: i, Schedule: Schedule{Start: start}, MeasureFrom: start, MeasureTo: far,
				StopAfter: perProducer, Drain: cfg.Drain, MaxBatch: cfg.MaxBatch, Tick: cfg.Tick,
			}, p, lat, live)
		}()
	}
	wg.Wait()
	closeAll()
	if cfg.Progress != nil {
		cfg.Progress.End()
	}
	writeSecs := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		w.peak.Stop()
		return res, err
	}
	for _, r := range results {
		res.addGen(r)
	}
	mid, err := sys.Stats(ctx)
	if err != nil {
		w.peak.Stop()
		return res, fmt.Errorf("bench: server stats: %w", err)
	}
	wpeak, _ := w.peak.Stop()
	backlogBytes := res.Acked * int64(cfg.RecordSize)
	res.Seconds = writeSecs
	res.RecordsPerSec = float64(res.Acked) / writeSecs
	res.MBPerSec = float64(backlogBytes) / writeSecs / 1e6
	res.Produce, res.ProduceDist = lat.Summary(), lat.Distribution()
	res.Cost = costOf(before, mid, writeSecs, float64(backlogBytes))
	res.Cost.setRunCounts(before, mid)
	res.Cost.PeakRSSBytes = wpeak
	res.Cost.ServersAlive = true
	if res.Acked == 0 {
		return res, fmt.Errorf("bench: catch-up backlog: nothing acknowledged (%s)", res.FirstError)
	}

	if cfg.BeforeRead != nil {
		if r, ok := sys.(Reconnecter); ok {
			if err := r.Disconnect(); err != nil {
				return res, fmt.Errorf("bench: before catch-up read: %w", err)
			}
		}
		if err := cfg.BeforeRead(ctx); err != nil {
			return res, fmt.Errorf("bench: before catch-up read: %w", err)
		}
		if r, ok := sys.(Reconnecter); ok {
			if err := r.Reconnect(ctx); err != nil {
				return res, fmt.Errorf("bench: before catch-up read: %w", err)
			}
		}
	}
	readStats := startStats(ctx, sys)
	rbefore, err := sys.Stats(ctx)
	if err != nil {
		readStats.peak.Stop()
		return res, fmt.Errorf("bench: server stats: %w", err)
	}
	rlive := &Counters{}
	if cfg.Progress != nil {
		cfg.Progress.BeginCount(fmt.Sprintf("%s catch-up: read backlog", sys.Name()), res.Acked, rlive, func() int64 { return rlive.Consumed.Load() })
	}
	rstart := time.Now()
	cpu0, cpuOK := processCPU()
	cons := startConsumers(ctx, sys, cfg.Consumers, true, nil, time.Time{}, time.Time{}, rlive)
	cons.waitCount(ctx, res.Acked, cfg.Drain)
	readSecs := time.Since(rstart).Seconds()
	cpu1, cpuOK1 := processCPU()
	cerr := cons.stop()
	if cfg.Progress != nil {
		cfg.Progress.End()
	}
	rafter, err := sys.Stats(ctx)
	rpeak, _ := readStats.peak.Stop()
	if err != nil {
		return res, fmt.Errorf("bench: server stats: %w", err)
	}
	read := cons.count.Load()
	readBytes := cons.bytes.Load()
	cr := &CatchupResult{
		BacklogRecords: res.Acked, BacklogBytes: backlogBytes,
		WriteSeconds: writeSecs, WriteMBPerSec: res.MBPerSec,
		ReadRecords: read, ReadSeconds: readSecs, ReadMBPerSec: float64(readBytes) / readSecs / 1e6,
		ReadCost: costOf(rbefore, rafter, readSecs, float64(readBytes)),
	}
	if cpuOK && cpuOK1 && readBytes > 0 {
		cr.ClientCPUMsPerMiB = (cpu1 - cpu0).Seconds() * 1000 / (float64(readBytes) / (1 << 20))
	}
	for range cfg.Rereads {
		again := &Counters{}
		cons := startConsumers(ctx, sys, cfg.Consumers, true, nil, time.Time{}, time.Time{}, again)
		cons.waitCount(ctx, res.Acked, cfg.Drain)
		if err := cons.stop(); err != nil && ctx.Err() == nil {
			return res, fmt.Errorf("bench: catch-up reread: %w", err)
		}
	}
	cr.ReadCost.PeakRSSBytes = rpeak
	cr.ReadCost.ServersAlive = readStats.alive.Load()
	res.Catchup = cr
	if read < res.Acked {
		msg := fmt.Sprintf("catch-up read %d of %d records", read, res.Acked)
		if cerr != nil {
			msg += ": " + cerr.Error()
		}
		if res.FirstError == "" {
			res.FirstError = msg
		}
	}
	return res, nil
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func rateLabel(r float64) string {
	if r <= 0 {
		return "closed loop"
	}
	return fmt.Sprintf("%.0f rec/s", r)
}

// addGen adds one producer's counts to the run's.
func (res *RunResult) addGen(r GenResult) {
	res.Sent += r.Sent
	res.Acked += r.Acked
	res.Failed += r.Failed
	res.Unacked += r.Unacked
	res.Unsent += r.Unsent
	if r.FirstError != nil && res.FirstError == "" {
		res.FirstError = r.FirstError.Error()
	}
}
