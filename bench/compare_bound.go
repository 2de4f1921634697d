package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

// The floor bound of a side-by-side run: a floe row's produce p99 at half
// its sustained rate against linger + 1.2 × (raw PUT p99 of its mean
// flush + raw commit p99), the suite's bound (Report.ProduceP99Bound),
// probed right after the row on the same store and metadata database
// while nothing else of the run is going. Rows of other systems (Apache
// Kafka writes no objects) get none.

// CompareProbe is what a comparison probes for the floor bound.
type CompareProbe struct {
	Store       objectstore.Store
	StoreName   string
	Committer   Committer
	CommitName  string
	Concurrency int
	Duration    time.Duration
	// Linger is the agents' linger.
	Linger time.Duration
}

// FloorBound is one floe row's bound and what it is made of.
type FloorBound struct {
	FlushBytes  int     `json:"flush_bytes"`
	LingerMs    float64 `json:"linger_ms"`
	PutP99Ms    float64 `json:"put_p99_ms"`
	CommitP99Ms float64 `json:"commit_p99_ms"`
	BoundMs     float64 `json:"bound_ms"`
}

// floorBound returns the bound of linger + 1.2 × (PUT p99 + commit p99).
func floorBound(lingerMs, putP99Ms, commitP99Ms float64) float64 {
	return lingerMs + 1.2*(putP99Ms+commitP99Ms)
}

// probeBound probes the raw PUT of flushBytes objects and the raw commit.
// It returns nil without a probe or a flush size.
func (p *CompareProbe) probeBound(ctx context.Context, flushBytes int) (*FloorBound, error) {
	if p == nil || p.Store == nil || p.Committer == nil || p.Duration <= 0 || flushBytes <= 0 {
		return nil, nil
	}
	st, err := ProbeStore(ctx, p.Store, p.StoreName, flushBytes, max(p.Concurrency, 1), p.Duration)
	if err != nil {
		return nil, fmt.Errorf("bench: floor bound: %w", err)
	}
	cl, err := ProbeCommit(ctx, p.Committer, p.CommitName, p.Duration)
	if err != nil {
		return nil, fmt.Errorf("bench: floor bound: %w", err)
	}
	b := &FloorBound{FlushBytes: flushBytes, LingerMs: ms(p.Linger), PutP99Ms: st.Put.Latency.P99Ms, CommitP99Ms: cl.Latency.P99Ms}
	b.BoundMs = floorBound(b.LingerMs, b.PutP99Ms, b.CommitP99Ms)
	return b, nil
}

// boundCell is a row's "p99 ÷ bound" cell.
func boundCell(row CompareRow) string {
	if row.Bound == nil || row.Bound.BoundMs <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f (%.0f ms)", row.Half.Produce.P99Ms/row.Bound.BoundMs, row.Bound.BoundMs)
}
