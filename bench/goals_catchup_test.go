package bench

import (
	"strings"
	"testing"
)

// The catch-up goal compares the read with the raw GET throughput of the
// same run, and says when the backlog fits the read cache or was not all
// read.
func TestCatchupGoal(t *testing.T) {
	withGet := func(get float64) Limits {
		return Limits{StoreMax: &StoreLimits{Get: RawOps{MBPerSec: get}}}
	}
	full := &CatchupResult{BacklogRecords: 1000, BacklogBytes: 1 << 30, ReadRecords: 1000, ReadMBPerSec: 800}
	for _, tc := range []struct {
		name   string
		c      *CatchupResult
		limits Limits
		cache  int64
		want   string
		note   string
	}{
		{"no catch-up run", nil, withGet(1000), 0, GoalNotMeasured, "-workload catchup"},
		{"no limits", full, Limits{}, 0, GoalNotMeasured, ""},
		{"at 80% of raw GET", full, withGet(1000), 256 << 20, GoalPass, ""},
		{"at 40% of raw GET", full, withGet(2000), 256 << 20, GoalFail, ""},
		{"fast but not all read", &CatchupResult{BacklogRecords: 1000, BacklogBytes: 1 << 30, ReadRecords: 10, ReadMBPerSec: 900}, withGet(1000), 0, GoalFail, "read 10 of 1000"},
		{"backlog within the cache", &CatchupResult{BacklogRecords: 10, BacklogBytes: 64 << 20, ReadRecords: 10, ReadMBPerSec: 900}, withGet(1000), 256 << 20, GoalPass, "fits the read cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Limits: tc.limits}
			r.Floe.Catchup = tc.c
			r.Settings.CacheBytes = tc.cache
			g := catchupGoal(r)
			if g.Status != tc.want || !strings.Contains(g.Note, tc.note) {
				t.Errorf("goal %s (%s; note %q), want %s with note %q", g.Status, g.Measured, g.Note, tc.want, tc.note)
			}
		})
	}
}
