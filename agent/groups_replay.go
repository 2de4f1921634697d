package agent

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Replay: a group reader far behind the high watermark (at least
// ReplayMinLagRecords) reads mostly cold files from the object store. Each
// of its reads then takes its bytes from the group's token bucket on this
// agent (ReplayBytesPerSecond, ReplayBurstBytes), so a replaying group
// slows itself down instead of taking the object store bandwidth, the
// loader's byte budget and the CPU that producers and tailing consumers
// need. Readers near the head never wait.

// replayWait charges a read of recs, lag records behind the head, to lim.
func (a *Agent) replayWait(ctx context.Context, lim *rate.Limiter, lag int64, recs []*floev1.Record) error {
	if lim == nil || lag < a.cfg.ReplayMinLagRecords {
		return nil
	}
	n := 0
	for _, r := range recs {
		n += len(r.GetKey()) + len(r.GetValue())
		for _, h := range r.GetHeaders() {
			n += len(h.GetKey()) + len(h.GetValue())
		}
	}
	// A read bigger than the burst is charged in burst-sized pieces.
	for n > 0 {
		c := min(n, lim.Burst())
		if err := lim.WaitN(ctx, c); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("replay budget: %w", err)
		}
		n -= c
	}
	return nil
}

// validateGroups checks the group and replay block of Config.
func (c Config) validateGroups() error {
	switch {
	case c.ReplayBytesPerSecond < 0:
		return fmt.Errorf("agent: config ReplayBytesPerSecond %d must not be negative", c.ReplayBytesPerSecond)
	case c.ReplayBytesPerSecond > 0 && c.ReplayBurstBytes < int64(c.MaxFetchBytes):
		return fmt.Errorf("agent: config ReplayBurstBytes %d must be at least MaxFetchBytes (%d)", c.ReplayBurstBytes, c.MaxFetchBytes)
	case c.ReplayMinLagRecords < 0:
		return fmt.Errorf("agent: config ReplayMinLagRecords %d must not be negative", c.ReplayMinLagRecords)
	case c.LagSampleWindow < 0:
		return fmt.Errorf("agent: config LagSampleWindow %v must not be negative", c.LagSampleWindow)
	case c.LagMetricsMaxGroups < 0:
		return fmt.Errorf("agent: config LagMetricsMaxGroups %d must not be negative", c.LagMetricsMaxGroups)
	case c.GroupRetention < 0:
		return fmt.Errorf("agent: config GroupRetention %v must not be negative", c.GroupRetention)
	}
	return nil
}

// defaultLagMetricsMaxGroups is used when Config.LagMetricsMaxGroups is zero.
const defaultLagMetricsMaxGroups = 200

func (c Config) lagMetricsMaxGroups() int {
	if c.LagMetricsMaxGroups > 0 {
		return c.LagMetricsMaxGroups
	}
	return defaultLagMetricsMaxGroups
}

// defaultLagSampleWindow is used when Config.LagSampleWindow is zero.
const defaultLagSampleWindow = 5 * time.Minute
