package console

import (
	"context"
	"sort"
	"sync"
	"time"
)

// history keeps each group's recent total lag, for the chart: a ring of
// at most capacity samples per group, for at most maxGroups groups (a
// group that disappears from the samples is dropped).
type history struct {
	capacity, maxGroups int

	mu     sync.Mutex // protects groups
	groups map[string]*ring
}

// ring is a bounded buffer of samples, oldest first from start.
type ring struct {
	points []lagPoint
	start  int
}

func newHistory(capacity, maxGroups int) *history {
	return &history{capacity: capacity, maxGroups: maxGroups, groups: make(map[string]*ring)}
}

func (r *ring) add(p lagPoint, capacity int) {
	if len(r.points) < capacity {
		r.points = append(r.points, p)
		return
	}
	r.points[r.start] = p
	r.start = (r.start + 1) % capacity
}

func (r *ring) ordered() []lagPoint {
	out := make([]lagPoint, 0, len(r.points))
	out = append(out, r.points[r.start:]...)
	return append(out, r.points[:r.start]...)
}

// record adds one sample per group seen at at and forgets the groups not
// seen (deleted).
func (h *history) record(at time.Time, lags map[string]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for g := range h.groups {
		if _, ok := lags[g]; !ok {
			delete(h.groups, g)
		}
	}
	for g, lag := range lags {
		r, ok := h.groups[g]
		if !ok {
			if len(h.groups) >= h.maxGroups {
				continue
			}
			r = &ring{}
			h.groups[g] = r
		}
		r.add(lagPoint{AtMs: at.UnixMilli(), LagRecords: lag}, h.capacity)
	}
}

// snapshot copies the series, by group name.
func (h *history) snapshot() []lagSeries {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]lagSeries, 0, len(h.groups))
	for g, r := range h.groups {
		out = append(out, lagSeries{Group: g, Points: r.ordered()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// sample records every group's lag each SampleInterval until ctx ends.
// A failed round is logged and skipped (a gap in the chart).
func (c *Console) sample(ctx context.Context) {
	t := time.NewTicker(c.opts.SampleInterval)
	defer t.Stop()
	for {
		c.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Console) sampleOnce(ctx context.Context) {
	if c.source() == nil {
		return
	}
	if c.opts.IdleAfter > 0 && time.Since(time.Unix(0, c.lastRead.Load())) > c.opts.IdleAfter {
		return // nobody watches
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	resp, err := c.groups(rctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("console lag sample failed", "err", err)
		}
		return
	}
	lags := make(map[string]int64, len(resp.Groups))
	for _, g := range resp.Groups {
		lags[g.Name] = g.LagRecords
	}
	c.history.record(time.Now(), lags)
}
