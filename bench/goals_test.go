package bench

import "testing"

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
	if len(gs) != 6 {
		t.Fatalf("%d goals, want 6", len(gs))
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
	} {
		if g := goalByID(t, gs, id); g.Status != want {
			t.Errorf("goal %s: %s (%s), want %s", id, g.Status, g.Measured, want)
		}
	}

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
