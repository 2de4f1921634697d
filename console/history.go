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

// record adds a sample at at for each group of lags and forgets the
// groups not present (deleted).
func (h *history) record(at time.Time, lags map[string]int64, present map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for g := range h.groups {
		if !present[g] {
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

// sample runs a pass each SampleInterval (or at once when woken) until
// ctx ends. A failed pass is logged and leaves a gap in the chart.
func (c *Console) sample(ctx context.Context) {
	t := time.NewTicker(c.opts.SampleInterval)
	defer t.Stop()
	for {
		c.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
	}
}

// sampleOnce runs one bounded pass over the topics and the groups
// (summary.go), unless nobody read the API for IdleAfter.
func (c *Console) sampleOnce(ctx context.Context) {
	src := c.source()
	if src == nil {
		return
	}
	if c.opts.IdleAfter > 0 && time.Since(time.Unix(0, c.lastRead.Load())) > c.opts.IdleAfter {
		return // nobody watches
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	now := time.Now()
	err := c.passTopics(rctx, src)
	if err == nil {
		err = c.passGroups(rctx, src, now)
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		c.log.Warn("console sample failed", "err", err)
	}
	f := c.sums
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastErr = err
	if err == nil {
		f.at, f.everSampled = time.Now(), true
	}
}
