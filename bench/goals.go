package bench

import (
	"fmt"
	"math"
)

// Goal statuses.
const (
	GoalPass = "pass"
	GoalFail = "fail"
	// GoalNotMeasured: the run did not exercise or could not measure it.
	GoalNotMeasured = "n/a"
)

// Goal is one of the goals checked against the figures.
type Goal struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Measured string `json:"measured"`
	Target   string `json:"target"`
	Note     string `json:"note,omitempty"`
}

// memoryOverhead is what an agent may hold beyond its buffered bytes and
// read cache (runtime, gRPC buffers, in-flight requests) before its
// memory counts as unbounded.
const memoryOverhead = 256 << 20

// floeRuns returns every floe run of the report.
func (r *Report) floeRuns() []RunResult {
	runs := append([]RunResult(nil), r.FloeSweep...)
	if r.FloeMax != nil {
		runs = append(runs, *r.FloeMax)
	}
	if len(runs) == 0 {
		runs = append(runs, r.Floe)
	}
	return runs
}

// LatencyFloor is the produce latency the machine allows at a percentile
// given by pick: the linger, plus a raw PUT of a flush-size object and a
// raw commit, both at that percentile. ok is false without limits.
func (r *Report) LatencyFloor(pick func(Summary) float64) (floor float64, ok bool) {
	st := r.Limits.FlushStore()
	if st == nil || r.Limits.Commit == nil {
		return 0, false
	}
	return r.Settings.LingerMs + pick(st.Put.Latency) + pick(r.Limits.Commit.Latency), true
}

// ProduceP99Bound is the goal's bound: linger + 1.2 × (raw PUT p99 + raw
// commit p99).
func (r *Report) ProduceP99Bound() (float64, bool) {
	st := r.Limits.FlushStore()
	if st == nil || r.Limits.Commit == nil {
		return 0, false
	}
	return r.Settings.LingerMs + 1.2*(st.Put.Latency.P99Ms+r.Limits.Commit.Latency.P99Ms), true
}

// MaxIngest returns floe's highest measured ingest (MB/s) and which run
// it comes from: in a sweep, the closed-loop run or a swept rate floe
// followed, whichever took more (a closed loop keeps far more in flight
// than an open-loop producer and can take less).
func (r *Report) MaxIngest() (mbps float64, from string) {
	switch {
	case r.FloeMax != nil:
		mbps, from = r.FloeMax.MBPerSec, "closed-loop run"
		if s, ok := bestFollowed(r.FloeSweep); ok && s.sustainedMBPerSec() > mbps {
			mbps, from = s.sustainedMBPerSec(), fmt.Sprintf("open loop at %.0f rec/s", s.TargetRate)
		}
		return mbps, from
	case r.Floe.Catchup != nil:
		return r.Floe.Catchup.WriteMBPerSec, "catch-up backlog write (closed loop)"
	case r.Floe.TargetRate <= 0:
		return r.Floe.MBPerSec, "closed-loop run"
	default:
		return r.Floe.MBPerSec, fmt.Sprintf("run offered %.0f rec/s (use -rate 0 or -sweep for the maximum)", r.Floe.TargetRate)
	}
}

// PeerMaxIngest is MaxIngest for the peer; ok is false without a peer
// maximum.
func (r *Report) PeerMaxIngest() (mbps float64, ok bool) {
	if r.PeerMax != nil {
		mbps, ok = r.PeerMax.MBPerSec, true
	}
	if s, found := bestFollowed(r.PeerSweep); found && s.sustainedMBPerSec() > mbps {
		mbps, ok = s.sustainedMBPerSec(), true
	}
	return mbps, ok
}

// bestFollowed returns the open-loop run of runs with the highest
// sustained throughput among those that followed their offered rate.
func bestFollowed(runs []RunResult) (best RunResult, ok bool) {
	for _, x := range runs {
		if x.TargetRate > 0 && x.Followed() && (!ok || x.sustainedMBPerSec() > best.sustainedMBPerSec()) {
			best, ok = x, true
		}
	}
	return best, ok
}

// sustainedMBPerSec is an open-loop run's throughput, at most its offered
// rate: acknowledgements of records sent late in the warm-up can land in
// the measured window and lift it above the offer.
func (r RunResult) sustainedMBPerSec() float64 {
	if r.TargetRate > 0 && r.RecordsPerSec > r.TargetRate {
		return r.MBPerSec * r.TargetRate / r.RecordsPerSec
	}
	return r.MBPerSec
}

// EvaluateGoals checks the goals against the report's figures.
func EvaluateGoals(r *Report) []Goal {
	status := func(ok bool) string {
		if ok {
			return GoalPass
		}
		return GoalFail
	}
	var goals []Goal
	runs := r.floeRuns()

	// One PUT per flush, and at most one commit (a commit may hold
	// several files: batcher.max_files_per_commit).
	g := Goal{ID: "put-commit-per-flush", Title: "one PUT and at most one metadata commit per flush",
		Target: fmt.Sprintf("1 PUT and at most 1 commit per flush at %d partitions", r.Settings.Partitions)}
	var puts, commits, flushes float64
	for _, run := range runs {
		puts += run.Cost.RunPUTs
		commits += run.Cost.RunCommits
		flushes += run.Cost.RunFlushes
	}
	if flushes == 0 {
		g.Status, g.Measured, g.Note = GoalNotMeasured, "no flush seen", "no agent metrics (-metrics) or nothing produced"
	} else {
		// Whole-run counts: every flush's PUT and commit are in.
		g.Status = status(puts == flushes && commits > 0 && commits <= flushes)
		g.Measured = fmt.Sprintf("%.0f PUTs, %.0f commits, %.0f flushes (%.3f PUTs and %.3f commits per flush)",
			puts, commits, flushes, puts/flushes, commits/flushes)
	}
	goals = append(goals, g)

	// Produce p99 at half the maximum sustainable rate.
	bound, haveLimits := r.ProduceP99Bound()
	where := "at the run's rate (the maximum sustainable rate needs -sweep)"
	if r.Settings.Sweep {
		where = fmt.Sprintf("at %.0f rec/s, half the maximum sustainable %.0f rec/s", r.Floe.TargetRate, r.SustainableRate)
	}
	g = Goal{ID: "produce-p99", Title: "produce p99 ≤ linger + 1.2 × (raw PUT p99 + raw commit p99)", Note: where}
	e := Goal{ID: "e2e-p99", Title: "end-to-end p99 ≤ the produce bound + 50 ms", Note: where}
	switch {
	case !haveLimits:
		g.Status, g.Measured, g.Target = GoalNotMeasured, fmt.Sprintf("p99 %.1f ms", r.Floe.Produce.P99Ms), "limits not measured"
		e.Status, e.Target = GoalNotMeasured, "limits not measured"
	case r.Floe.Workload == WorkloadCatchup:
		g.Status, g.Target = GoalNotMeasured, fmt.Sprintf("≤ %.1f ms", bound)
		g.Measured, g.Note = "catch-up backlog is written closed-loop", "run -workload produce or e2e"
		e.Status, e.Target = GoalNotMeasured, fmt.Sprintf("≤ %.1f ms", bound+50)
	default:
		g.Target = fmt.Sprintf("≤ %.1f ms", bound)
		g.Measured = fmt.Sprintf("p99 %.1f ms", r.Floe.Produce.P99Ms)
		g.Status = status(r.Floe.Produce.Count > 0 && r.Floe.Produce.P99Ms <= bound)
		e.Target = fmt.Sprintf("≤ %.1f ms", bound+50)
	}
	goals = append(goals, g)
	if r.Floe.E2E != nil && haveLimits {
		e.Measured = fmt.Sprintf("p99 %.1f ms", r.Floe.E2E.P99Ms)
		e.Status = status(r.Floe.E2E.Count > 0 && r.Floe.E2E.P99Ms <= bound+50)
	} else if e.Status == "" {
		e.Status, e.Measured, e.Note = GoalNotMeasured, "no consumers", "run -workload e2e"
	}
	goals = append(goals, e)

	// Ingest throughput against raw PUT throughput.
	g = Goal{ID: "ingest-throughput", Title: "ingest ≥ 70% of the raw PUT throughput of the same store"}
	ingest, from := r.MaxIngest()
	g.Note = from
	closedLoop := r.FloeMax != nil || r.Floe.Catchup != nil || r.Floe.TargetRate <= 0
	if r.Limits.StoreMax == nil || r.Limits.StoreMax.Put.MBPerSec <= 0 {
		g.Status, g.Measured, g.Target = GoalNotMeasured, fmt.Sprintf("%.1f MB/s", ingest), "limits not measured"
	} else if !closedLoop {
		raw := r.Limits.StoreMax.Put.MBPerSec
		g.Status, g.Target = GoalNotMeasured, fmt.Sprintf("≥ %.1f MB/s (70%% of %.1f MB/s)", 0.7*raw, raw)
		g.Measured = fmt.Sprintf("%.1f MB/s offered and taken, not the maximum", ingest)
	} else {
		raw := r.Limits.StoreMax.Put.MBPerSec
		g.Target = fmt.Sprintf("≥ %.1f MB/s (70%% of %.1f MB/s)", 0.7*raw, raw)
		g.Measured = fmt.Sprintf("%.1f MB/s (%.0f%% of raw PUT)", ingest, 100*ingest/raw)
		g.Status = status(ingest >= 0.7*raw)
	}
	goals = append(goals, g)

	goals = append(goals, catchupGoal(r))

	// CPU per MiB, at the highest load measured.
	g = Goal{ID: "cpu-per-mib", Title: "agent CPU ≤ 20 ms per MiB ingested", Target: "≤ 20 ms/MiB"}
	cpuRun := r.Floe
	if r.FloeMax != nil {
		cpuRun = *r.FloeMax
		g.Note = "closed-loop run"
	} else if !closedLoop {
		g.Note = fmt.Sprintf("at %.1f MB/s offered: fixed costs weigh more at low rates; -rate 0 or -sweep measures it at load", r.Floe.MBPerSec)
	}
	if cpuRun.Cost.CPUSeconds <= 0 || cpuRun.Cost.CPUMsPerMiB <= 0 {
		g.Status, g.Measured = GoalNotMeasured, "no agent CPU figures"
	} else {
		g.Measured = fmt.Sprintf("%.1f ms/MiB (%.2f CPU s per GiB)", cpuRun.Cost.CPUMsPerMiB, cpuRun.Cost.CPUSecPerGiB)
		g.Status = status(cpuRun.Cost.CPUMsPerMiB <= 20)
	}
	goals = append(goals, g)

	// Memory under overload.
	limit := float64(r.Settings.MaxBufferedBytes + r.Settings.CacheBytes + memoryOverhead)
	g = Goal{ID: "memory-bounded", Title: "memory bounded under overload: producers slowed, the agent not killed",
		Target: fmt.Sprintf("agents alive, peak RSS ≤ %s (buffer %s + cache %s + %s)", byteSize(limit),
			byteSize(float64(r.Settings.MaxBufferedBytes)), byteSize(float64(r.Settings.CacheBytes)), byteSize(memoryOverhead))}
	var peak, backpressured float64
	alive, overloaded := true, false
	for _, run := range runs {
		peak = math.Max(peak, run.Cost.PeakRSSBytes)
		backpressured += run.Cost.Backpressured
		alive = alive && run.Cost.ServersAlive
		if run.Cost.Backpressured > 0 || !run.Followed() || run.TargetRate <= 0 {
			overloaded = true
		}
	}
	switch {
	case peak == 0:
		g.Status, g.Measured = GoalNotMeasured, "no agent memory figures"
	case !overloaded:
		g.Status = GoalNotMeasured
		g.Measured = fmt.Sprintf("peak RSS %s, never overloaded", byteSize(peak))
		g.Note = "run -sweep or -rate 0 to overload"
	default:
		g.Measured = fmt.Sprintf("peak RSS %s under overload (closed loop or beyond the sustainable rate), %.0f produce calls made to wait for buffer space, agents alive: %v", byteSize(peak), backpressured, alive)
		g.Status = status(alive && peak <= limit)
	}
	goals = append(goals, g)
	return goals
}

// catchupReadGoal is the share of the raw GET throughput a cold catch-up
// must read at.
const catchupReadGoal = 0.70

// catchupGoal checks the catch-up read against the raw GET throughput of
// the same store, measured in the same run; it notes a backlog that fits
// the agents' read cache (which then measures the cache, not the reads).
func catchupGoal(r *Report) Goal {
	g := Goal{ID: "catchup-read", Title: "cold catch-up read ≥ 70% of the raw GET throughput of the same store", Target: "≥ 70% of raw GET"}
	c := r.Floe.Catchup
	switch {
	case c == nil:
		g.Status, g.Measured, g.Note = GoalNotMeasured, "no catch-up run", "run -workload catchup"
		return g
	case r.Limits.StoreMax == nil || r.Limits.StoreMax.Get.MBPerSec <= 0:
		g.Status, g.Measured, g.Target = GoalNotMeasured, fmt.Sprintf("%.1f MB/s", c.ReadMBPerSec), "limits not measured"
		return g
	}
	raw := r.Limits.StoreMax.Get.MBPerSec
	g.Target = fmt.Sprintf("≥ %.1f MB/s (%.0f%% of %.1f MB/s)", catchupReadGoal*raw, 100*catchupReadGoal, raw)
	g.Measured = fmt.Sprintf("%.1f MB/s (%.0f%% of raw GET) over a %s backlog", c.ReadMBPerSec, 100*c.ReadMBPerSec/raw, byteSize(float64(c.BacklogBytes)))
	g.Status = GoalFail
	if c.ReadRecords >= c.BacklogRecords && c.ReadMBPerSec >= catchupReadGoal*raw {
		g.Status = GoalPass
	}
	if c.ReadRecords < c.BacklogRecords {
		g.Note = fmt.Sprintf("read %d of %d records", c.ReadRecords, c.BacklogRecords)
	} else if r.Settings.CacheBytes > 0 && c.BacklogBytes <= r.Settings.CacheBytes {
		g.Note = fmt.Sprintf("the backlog fits the read cache (%s): use a larger -backlog-mb", byteSize(float64(r.Settings.CacheBytes)))
	}
	return g
}
