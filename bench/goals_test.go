package bench

import (
	"math"
	"strings"
	"testing"
)

func goalByID(t *testing.T, gs []Goal, id string) Goal {
	t.Helper()
	for _, g := range gs {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("no goal %q", id)
	return Goal{}
}

func TestGoals(t *testing.T) {
	r := fixtureReport()
	gs := EvaluateGoals(r)
	if len(gs) != 7 {
		t.Fatalf("%d goals, want 7", len(gs))
	}
	// Bound: 250 + 1.2 × (raw PUT p99 10.8 + commit p99 0.09) = 263.1 ms;
	// the headline run's p99 is 288.
	for id, want := range map[string]string{
		"put-commit-per-flush": GoalPass,
		"produce-p99":          GoalFail,
		"e2e-p99":              GoalPass, // 297 ≤ 313.1
		"ingest-throughput":    GoalFail, // 60 of 335 MB/s
		"cpu-per-mib":          GoalPass, // 11.7 ms
		"memory-bounded":       GoalPass, // 200 MiB, closed loop ran
		"catchup-read":         GoalNotMeasured,
	} {
		if g := goalByID(t, gs, id); g.Status != want {
			t.Errorf("goal %s: %s (%s), want %s", id, g.Status, g.Measured, want)
		}
	}

	// Fewer commits than flushes (several files in one) pass; one more
	// fails.
	r.FloeSweep[0].Cost.RunCommits--
	if g := goalByID(t, EvaluateGoals(r), "put-commit-per-flush"); g.Status != GoalPass {
		t.Errorf("two files in one commit: %s (%s)", g.Status, g.Measured)
	}
	r.FloeSweep[0].Cost.RunCommits += 2
	if g := goalByID(t, EvaluateGoals(r), "put-commit-per-flush"); g.Status != GoalFail {
		t.Errorf("an extra commit: %s", g.Status)
	}
	r.FloeSweep[0].Cost.RunCommits--

	// One PUT too many fails the cost goal; a dead agent fails memory.
	r.FloeSweep[0].Cost.RunPUTs++
	r.FloeSweep[1].Cost.ServersAlive = false
	gs = EvaluateGoals(r)
	if g := goalByID(t, gs, "put-commit-per-flush"); g.Status != GoalFail {
		t.Errorf("an extra PUT: %s", g.Status)
	}
	if g := goalByID(t, gs, "memory-bounded"); g.Status != GoalFail {
		t.Errorf("a dead agent: %s", g.Status)
	}

	// Without limits, the latency and throughput goals are not measured;
	// a rate-limited single run says nothing about the maximum.
	s := singleReport()
	s.Limits = Limits{}
	gs = EvaluateGoals(s)
	for _, id := range []string{"produce-p99", "e2e-p99", "ingest-throughput", "memory-bounded"} {
		if g := goalByID(t, gs, id); g.Status != GoalNotMeasured {
			t.Errorf("goal %s: %s, want n/a", id, g.Status)
		}
	}
}

func TestMaxIngestTakesTheBestFollowedStep(t *testing.T) {
	r := fixtureReport()
	// The closed loop (60 MB/s) beats every followed step.
	if mb, from := r.MaxIngest(); mb != 60 || from != "closed-loop run" {
		t.Errorf("MaxIngest = %v (%s), want 60 from the closed loop", mb, from)
	}
	// A followed step above the closed loop wins; one that did not follow
	// does not count, whatever its throughput.
	r.FloeSweep[1].MBPerSec = 75
	r.FloeSweep[2].MBPerSec = 95 // 39,000 of 58,000 rec/s: not followed
	if mb, from := r.MaxIngest(); mb != 75 || from != "open loop at 29000 rec/s" {
		t.Errorf("MaxIngest = %v (%s), want 75 from the 29000 rec/s step", mb, from)
	}
	// Acknowledgements above the offered rate (warm-up backlog) are capped
	// at the offer.
	r.FloeSweep[1].RecordsPerSec = 31900 // 10% above the offered 29,000
	if mb, _ := r.MaxIngest(); math.Abs(mb-75*29000.0/31900) > 1e-9 {
		t.Errorf("MaxIngest = %v, want %v", mb, 75*29000.0/31900)
	}
	if g := goalByID(t, EvaluateGoals(r), "ingest-throughput"); g.Note != "open loop at 29000 rec/s" {
		t.Errorf("ingest goal note %q", g.Note)
	}
	// The peer: its closed loop (90) unless a followed step took more.
	if mb, ok := r.PeerMaxIngest(); !ok || mb != 90 {
		t.Errorf("PeerMaxIngest = %v, %v; want 90", mb, ok)
	}
	r.PeerSweep[0].MBPerSec = 120
	if mb, _ := r.PeerMaxIngest(); mb != 120 {
		t.Errorf("PeerMaxIngest = %v, want 120", mb)
	}
	r.PeerMax, r.PeerSweep = nil, nil
	if _, ok := r.PeerMaxIngest(); ok {
		t.Error("PeerMaxIngest without a peer reports a figure")
	}
}

func TestNextSweepRate(t *testing.T) {
	for _, c := range []struct {
		rates []float64
		want  float64
	}{
		{[]float64{1000, 2500, 5000, 7500, 10000, 12500}, 15000},
		{[]float64{10000, 12500, 15000}, 17500},
		{[]float64{8000}, 10000},
		{[]float64{5000, 5000}, 6250}, // no increment: a quarter more
	} {
		if got := nextSweepRate(c.rates); got != c.want {
			t.Errorf("nextSweepRate(%v) = %v, want %v", c.rates, got, c.want)
		}
	}
}

func TestSuiteConfigValidate(t *testing.T) {
	c := DefaultSuiteConfig()
	c.Sweep = true
	if err := c.validate(); err != nil {
		t.Fatalf("default sweep: %v", err)
	}
	c.SweepExtend = -1
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "SweepExtend") {
		t.Errorf("negative SweepExtend: %v", err)
	}
	c = DefaultSuiteConfig()
	c.Sweep, c.SweepSteps = true, []float64{10, 0}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "SweepSteps") {
		t.Errorf("a zero step: %v", err)
	}
}

func TestFollowed(t *testing.T) {
	r := RunResult{TargetRate: 8850, Seconds: 2, RecordsPerSec: 9037}
	for _, c := range []struct {
		unsent, failed int64
		perSec         float64
		want           bool
	}{
		{0, 0, 9037, true},
		{7, 0, 9037, true},    // the last tick's records: a boundary effect
		{177, 0, 9037, true},  // 1% of the window's 17,700
		{178, 0, 9037, false}, // more than 1% never sent: behind
		{0, 1, 9037, false},   // a failure
		{0, 0, 7900, false},   // under 90% acknowledged
	} {
		r.Unsent, r.Failed, r.RecordsPerSec = c.unsent, c.failed, c.perSec
		if got := r.Followed(); got != c.want {
			t.Errorf("unsent %d, failed %d, %v rec/s: Followed() = %v, want %v", c.unsent, c.failed, c.perSec, got, c.want)
		}
	}
	closed := RunResult{RecordsPerSec: 1000}
	if !closed.Followed() {
		t.Error("a closed loop without failures did not follow")
	}
}
