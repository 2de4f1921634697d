package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

// SuiteConfig is a whole benchmark: a single run or a sweep of floe, the
// optional peer, and the limits, with the settings the goals need.
type SuiteConfig struct {
	// Run is the template of every run; its Topic is a prefix.
	Run RunConfig
	// Sweep raises the rate through SweepSteps (percent of floe's
	// closed-loop maximum) until the produce p99 passes SweepMaxP99 or the
	// throughput stops following the offered rate. When floe still follows
	// the last step, the sweep goes on by the last step's increment, at
	// most SweepExtend more steps, so that it finds where latency breaks.
	Sweep       bool
	SweepSteps  []float64
	SweepMaxP99 time.Duration
	SweepExtend int
	// The agents' settings, for the goals and the limits' object size.
	Linger            time.Duration
	MaxFileBytes      int
	MaxBufferedBytes  int64
	CacheBytes        int64
	UploadConcurrency int
	// LimitsDuration is how long each raw probe runs.
	LimitsDuration time.Duration
	// Deployment and Command describe the run in the report.
	Deployment string
	Command    string
	Progress   *Progress
	Logger     *slog.Logger
}

// DefaultSuiteConfig returns a single produce run with floe's default
// agent settings.
func DefaultSuiteConfig() SuiteConfig {
	return SuiteConfig{
		Run:               DefaultRunConfig(),
		SweepSteps:        []float64{10, 25, 50, 75, 90, 100, 110},
		SweepMaxP99:       2 * time.Second,
		SweepExtend:       3,
		Linger:            250 * time.Millisecond,
		MaxFileBytes:      8 << 20,
		MaxBufferedBytes:  64 << 20,
		CacheBytes:        256 << 20,
		UploadConcurrency: 4,
		LimitsDuration:    2 * time.Second,
	}
}

func (c SuiteConfig) validate() error {
	switch {
	case c.Sweep && len(c.SweepSteps) == 0:
		return errors.New("bench: SuiteConfig.SweepSteps is empty")
	case c.Sweep && c.Run.Workload == WorkloadCatchup:
		return errors.New("bench: SuiteConfig.Sweep does not apply to the catchup workload")
	case c.Sweep && c.SweepMaxP99 <= 0:
		return fmt.Errorf("bench: SuiteConfig.SweepMaxP99 %v must be positive", c.SweepMaxP99)
	case c.SweepExtend < 0:
		return fmt.Errorf("bench: SuiteConfig.SweepExtend %d must not be negative", c.SweepExtend)
	case c.MaxFileBytes < 1:
		return fmt.Errorf("bench: SuiteConfig.MaxFileBytes %d must be positive", c.MaxFileBytes)
	case c.UploadConcurrency < 1:
		return fmt.Errorf("bench: SuiteConfig.UploadConcurrency %d must be positive", c.UploadConcurrency)
	case c.LimitsDuration < 0:
		return fmt.Errorf("bench: SuiteConfig.LimitsDuration %v must not be negative", c.LimitsDuration)
	}
	for _, s := range c.SweepSteps {
		if s <= 0 {
			return fmt.Errorf("bench: SuiteConfig.SweepSteps holds %v; steps must be positive percentages", s)
		}
	}
	return nil
}

// Targets are what a suite measures: floe, the optional peer, and the
// stores the limits are probed on (either may be nil: not measured).
type Targets struct {
	Floe System
	Peer System
	// ProbeStore is the object store floe's agents use (a separate bucket
	// or directory of the same server or disk).
	ProbeStore     objectstore.Store
	ProbeStoreName string
	// ProbeCommitter commits to the metadata store floe's agents use.
	ProbeCommitter  Committer
	ProbeCommitName string
	// BeforeRead restarts floe's agents between a catch-up's phases.
	BeforeRead func(context.Context) error
}

// Limits are what the machine allows, measured in the same run.
type Limits struct {
	// StoreMax is PUT/GET of max_file_bytes objects: the throughput limit.
	StoreMax *StoreLimits `json:"store_max,omitempty"`
	// StoreFlush is PUT/GET of objects of floe's mean flush size: the
	// latency limit (nil when that is max_file_bytes).
	StoreFlush *StoreLimits  `json:"store_flush,omitempty"`
	Commit     *CommitLimits `json:"commit,omitempty"`
}

// FlushStore returns the probe of the flush-size objects.
func (l Limits) FlushStore() *StoreLimits {
	if l.StoreFlush != nil {
		return l.StoreFlush
	}
	return l.StoreMax
}

// Host describes the machine.
type Host struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Hostname  string `json:"hostname"`
}

func hostInfo() Host {
	hn, _ := os.Hostname()
	return Host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, Hostname: hn}
}

// Settings are the run's parameters, as reported.
type Settings struct {
	Deployment       string   `json:"deployment"`
	Command          string   `json:"command,omitempty"`
	Workload         Workload `json:"workload"`
	Partitions       int      `json:"partitions"`
	Producers        int      `json:"producers"`
	Consumers        int      `json:"consumers"`
	RecordSize       int      `json:"record_size"`
	Rate             float64  `json:"rate"`
	WarmupSeconds    float64  `json:"warmup_seconds"`
	DurationSeconds  float64  `json:"duration_seconds"`
	LingerMs         float64  `json:"linger_ms"`
	MaxFileBytes     int      `json:"max_file_bytes"`
	MaxBufferedBytes int64    `json:"max_buffered_bytes"`
	CacheBytes       int64    `json:"cache_bytes"`
	Sweep            bool     `json:"sweep"`
	// SweepMaxP99Ms is the p99 a swept rate must keep to be sustained.
	SweepMaxP99Ms float64 `json:"sweep_max_p99_ms,omitempty"`
	Peer          string  `json:"peer,omitempty"`
}

// Report is the outcome of a suite, rendered as JSON, Markdown and SVG.
type Report struct {
	Started  time.Time `json:"started"`
	Host     Host      `json:"host"`
	Settings Settings  `json:"settings"`
	// Floe is the headline run: the single run, or in a sweep the step
	// at half the maximum sustainable rate.
	Floe      RunResult   `json:"floe"`
	FloeMax   *RunResult  `json:"floe_max,omitempty"`
	FloeSweep []RunResult `json:"floe_sweep,omitempty"`
	// SustainableRate is the highest swept rate floe followed within the
	// p99 bound (records/s).
	SustainableRate float64     `json:"sustainable_rate,omitempty"`
	Peer            *RunResult  `json:"peer,omitempty"`
	PeerMax         *RunResult  `json:"peer_max,omitempty"`
	PeerSweep       []RunResult `json:"peer_sweep,omitempty"`
	Limits          Limits      `json:"limits"`
	Goals           []Goal      `json:"goals"`
	Notes           []string    `json:"notes,omitempty"`
}

// RunSuite runs the suite.
func RunSuite(ctx context.Context, cfg SuiteConfig, t Targets) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if t.Floe == nil {
		return nil, errors.New("bench: Targets.Floe is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rep := &Report{
		Started: time.Now().UTC().Truncate(time.Second),
		Host:    hostInfo(),
		Settings: Settings{
			Deployment: cfg.Deployment, Command: cfg.Command, Workload: cfg.Run.Workload,
			Partitions: cfg.Run.Partitions, Producers: cfg.Run.Producers, Consumers: cfg.Run.Consumers,
			RecordSize: cfg.Run.RecordSize, Rate: cfg.Run.Rate,
			WarmupSeconds: cfg.Run.Warmup.Seconds(), DurationSeconds: cfg.Run.Duration.Seconds(),
			LingerMs: ms(cfg.Linger), MaxFileBytes: cfg.MaxFileBytes, MaxBufferedBytes: cfg.MaxBufferedBytes,
			CacheBytes: cfg.CacheBytes, Sweep: cfg.Sweep, SweepMaxP99Ms: ms(cfg.SweepMaxP99),
		},
	}
	if t.Peer != nil {
		rep.Settings.Peer = t.Peer.Name()
	}
	topicSeq := 0
	runOn := func(sys System, rc RunConfig) (RunResult, error) {
		topicSeq++
		rc.Topic = fmt.Sprintf("%s-%d-%d", cfg.Run.Topic, time.Now().Unix(), topicSeq)
		rc.Progress, rc.Logger = cfg.Progress, cfg.Logger
		if sys == t.Floe {
			rc.BeforeRead = t.BeforeRead
		} else {
			// The peer publishes message by message: the producer-side
			// batching tick would only delay it.
			rc.Tick = min(rc.Tick, time.Millisecond)
		}
		r, err := Run(ctx, sys, rc)
		if err != nil {
			return r, fmt.Errorf("bench: %s %s run: %w", sys.Name(), rc.Workload, err)
		}
		return r, nil
	}

	if !cfg.Sweep {
		r, err := runOn(t.Floe, cfg.Run)
		if err != nil {
			return nil, err
		}
		rep.Floe = r
		if t.Peer != nil {
			p, err := runOn(t.Peer, cfg.Run)
			if err != nil {
				return nil, err
			}
			rep.Peer = &p
		}
	} else if err := runSweep(ctx, cfg, t, rep, runOn); err != nil {
		return nil, err
	}

	if err := probeLimits(ctx, cfg, t, rep); err != nil {
		return nil, err
	}
	rep.Goals = EvaluateGoals(rep)
	return rep, nil
}

// runSweep measures floe's closed-loop maximum, then runs both systems
// at the same absolute rates, percentages of that maximum.
func runSweep(ctx context.Context, cfg SuiteConfig, t Targets, rep *Report, runOn func(System, RunConfig) (RunResult, error)) error {
	rc := cfg.Run
	rc.Rate = 0
	maxRun, err := runOn(t.Floe, rc)
	if err != nil {
		return err
	}
	rep.FloeMax = &maxRun
	top := maxRun.RecordsPerSec
	if top <= 0 {
		return fmt.Errorf("bench: floe acknowledged nothing at full speed (%s)", maxRun.FirstError)
	}
	steps := append([]float64(nil), cfg.SweepSteps...)
	sort.Float64s(steps)
	broken := func(r RunResult) bool { return !r.Sustained(cfg.SweepMaxP99) }
	// sweep runs rates in order until one breaks; with extend, it goes on
	// past the last while the system still follows.
	sweep := func(sys System, rates []float64, extend int) ([]RunResult, error) {
		var out []RunResult
		for i := 0; i < len(rates); i++ {
			rc := cfg.Run
			rc.Rate = rates[i]
			r, err := runOn(sys, rc)
			if err != nil {
				return out, err
			}
			out = append(out, r)
			if broken(r) {
				break
			}
			if i == len(rates)-1 && extend > 0 {
				extend--
				rates = append(rates, nextSweepRate(rates))
			}
		}
		return out, nil
	}
	rates := make([]float64, len(steps))
	for i, s := range steps {
		rates[i] = math.Round(top * s / 100)
	}
	if rep.FloeSweep, err = sweep(t.Floe, rates, cfg.SweepExtend); err != nil {
		return err
	}
	for _, r := range rep.FloeSweep {
		if !broken(r) {
			rep.SustainableRate = r.TargetRate
		}
	}
	if last := rep.FloeSweep[len(rep.FloeSweep)-1]; !broken(last) {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"floe followed every swept rate up to %.0f rec/s: its maximum sustainable rate is higher (raise -sweep-steps)", last.TargetRate))
	}
	if rep.SustainableRate == 0 {
		rep.Notes = append(rep.Notes, "floe sustained none of the swept rates; the headline run is the lowest step")
		rep.Floe = rep.FloeSweep[0]
	} else {
		half := rep.SustainableRate / 2
		idx := -1
		for i, r := range rep.FloeSweep {
			if math.Abs(r.TargetRate-half) <= 0.1*half && (idx < 0 || math.Abs(r.TargetRate-half) < math.Abs(rep.FloeSweep[idx].TargetRate-half)) {
				idx = i
			}
		}
		if idx < 0 {
			rc := cfg.Run
			rc.Rate = math.Round(half)
			r, err := runOn(t.Floe, rc)
			if err != nil {
				return err
			}
			rep.FloeSweep = append(rep.FloeSweep, r)
			sort.Slice(rep.FloeSweep, func(i, j int) bool { return rep.FloeSweep[i].TargetRate < rep.FloeSweep[j].TargetRate })
			for i, s := range rep.FloeSweep {
				if s.TargetRate == rc.Rate {
					idx = i
				}
			}
		}
		rep.Floe = rep.FloeSweep[idx]
	}
	if t.Peer == nil {
		return nil
	}
	rc = cfg.Run
	rc.Rate = 0
	pmax, err := runOn(t.Peer, rc)
	if err != nil {
		return err
	}
	rep.PeerMax = &pmax
	var prates []float64
	for _, r := range rep.FloeSweep {
		prates = append(prates, r.TargetRate)
	}
	if rep.PeerSweep, err = sweep(t.Peer, prates, 0); err != nil {
		return err
	}
	for i := range rep.PeerSweep {
		if rep.PeerSweep[i].TargetRate == rep.Floe.TargetRate {
			p := rep.PeerSweep[i]
			rep.Peer = &p
		}
	}
	return nil
}

// nextSweepRate is the rate after the last of rates: one more step of the
// last increment (a quarter more after a single rate).
func nextSweepRate(rates []float64) float64 {
	last := rates[len(rates)-1]
	step := last / 4
	if n := len(rates); n > 1 && rates[n-1] > rates[n-2] {
		step = rates[n-1] - rates[n-2]
	}
	return math.Round(last + step)
}

// probeLimits measures the raw store and commit limits.
func probeLimits(ctx context.Context, cfg SuiteConfig, t Targets, rep *Report) error {
	if cfg.LimitsDuration == 0 {
		rep.Notes = append(rep.Notes, "limits not measured (-limits-duration 0)")
		return nil
	}
	if t.ProbeStore != nil {
		cfg.Progress.Note("limits: raw PUT/GET of %s objects on %s, concurrency %d", byteSize(float64(cfg.MaxFileBytes)), t.ProbeStoreName, cfg.UploadConcurrency)
		sl, err := ProbeStore(ctx, t.ProbeStore, t.ProbeStoreName, cfg.MaxFileBytes, cfg.UploadConcurrency, cfg.LimitsDuration)
		if err != nil {
			return err
		}
		rep.Limits.StoreMax = &sl
		flush := int(rep.Floe.Cost.MeanFlushBytes)
		if flush > 0 && math.Abs(float64(flush-cfg.MaxFileBytes)) > 0.2*float64(cfg.MaxFileBytes) {
			cfg.Progress.Note("limits: raw PUT/GET of %s objects (floe's mean flush)", byteSize(float64(flush)))
			fl, err := ProbeStore(ctx, t.ProbeStore, t.ProbeStoreName, flush, cfg.UploadConcurrency, cfg.LimitsDuration)
			if err != nil {
				return err
			}
			rep.Limits.StoreFlush = &fl
		}
	} else {
		rep.Notes = append(rep.Notes, "object store limits not measured: no probe store given")
	}
	if t.ProbeCommitter != nil {
		cfg.Progress.Note("limits: raw commit round trips on %s", t.ProbeCommitName)
		cl, err := ProbeCommit(ctx, t.ProbeCommitter, t.ProbeCommitName, cfg.LimitsDuration)
		if err != nil {
			return err
		}
		rep.Limits.Commit = &cl
	} else {
		rep.Notes = append(rep.Notes, "metadata commit limit not measured: no probe database given")
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
