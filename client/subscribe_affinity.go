package client

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Read affinity: a subscription that names its partitions reads each one
// from the agent a Router prefers for it, the agent that writes it (when
// producers follow the same router), whose read cache then already holds
// its files and which loads only files of its own partitions. Without it
// one agent serves every partition the consumer names and loads each file
// of the others' partitions whole: on two agents every byte is fetched
// from the store twice.
//
// The partitions are grouped by Router.Route, one stream per agent. A
// stream that fails retriably marks its agent down in the router (unless
// it is the bootstrap's), waits its backoff (ResumeOptions) and its
// partitions are routed again (to the bootstrap agent while the agent is
// down) and resubscribed from the offset after the last record handed
// over in each: the caller sees every record once, in offset order per
// partition. A partition that fell back to the bootstrap agent stays on
// it until the subscription ends. fn is called by one goroutine at a
// time.

// SubscribeAffinity is SubscribeResume with read affinity: each of the
// partitions req names (every partition of the topic without it) is read
// from the agent router prefers for it, falling back as above. fn gets
// records, also in batches mode (decoded here), as for SubscribeResume.
// Offsets are resolved through the bootstrap agent. It returns when fn
// returns an error (nil for ErrStop), ctx ends (ctx.Err()), or a failure
// is not retriable (that error).
func SubscribeAffinity(ctx context.Context, router *Router, req *floev1.SubscribeRequest, opts ResumeOptions,
	fn func(*floev1.SubscribeResponse) error) error {
	opts.Lend = false // fn's records may reference the batches
	return subscribeRouted(ctx, router, req, opts, func(resp *floev1.SubscribeResponse, from int64) (int64, error) {
		return handOver(resp, from, fn)
	})
}

// SubscribeAffinityBatches is SubscribeAffinity in batches mode for a
// reader that walks the stored batches itself (WalkBatches): fn gets each
// answer as the agent sent it, undecoded, and from, the partition's
// offset due: records below it were handed over before (the first batch
// of an answer may begin earlier) and are the caller's to skip, as
// WalkBatches(resp.GetBatches(), from, ...) does. The offset due moves to
// the answer's next_offset once fn returns nil. With opts.Lend the answer
// is valid only until fn returns.
func SubscribeAffinityBatches(ctx context.Context, router *Router, req *floev1.SubscribeRequest, opts ResumeOptions,
	fn func(resp *floev1.SubscribeResponse, from int64) error) error {
	breq := &floev1.SubscribeRequest{Topic: req.GetTopic(), Partitions: req.GetPartitions(), Offsets: req.GetOffsets(),
		Start: req.GetStart(), MaxBytes: req.GetMaxBytes(), Batches: true}
	return subscribeRouted(ctx, router, breq, opts, func(resp *floev1.SubscribeResponse, from int64) (int64, error) {
		if err := callFn(func(r *floev1.SubscribeResponse) error { return fn(r, from) }, resp); err != nil {
			return from, err
		}
		return max(from, resp.GetNextOffset()), nil
	})
}

// routedSub is one read-affinity subscription's state.
type routedSub struct {
	router *Router
	req    *floev1.SubscribeRequest // topic, max bytes, batches
	opts   ResumeOptions
	handle func(resp *floev1.SubscribeResponse, from int64) (int64, error)
	mu     sync.Mutex      // guards next; held while handle runs (one call at a time)
	next   map[int32]int64 // partition -> offset of the next record due
}

// routedEnd is how one stream ended: err set ends the subscription, else
// parts are routed again, the next failure waiting wait.
type routedEnd struct {
	parts []int32
	wait  time.Duration
	err   error
}

// errStopped: fn returned ErrStop.
var errStopped = errors.New("client: subscription stopped")

func subscribeRouted(ctx context.Context, router *Router, req *floev1.SubscribeRequest, opts ResumeOptions,
	handle func(resp *floev1.SubscribeResponse, from int64) (int64, error)) error {
	if router == nil {
		return errors.New("client: read affinity needs a router")
	}
	opts = opts.withDefaults()
	boot := &resumer{clients: []*Client{router.Bootstrap()}, opts: opts, wait: opts.MinBackoff}
	next, err := boot.resolve(ctx, req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &routedSub{router: router, req: req, opts: opts, handle: handle, next: next}
	ends := make(chan routedEnd)
	active := 0
	start := func(parts []int32, wait time.Duration) {
		groups := map[*Client][]int32{}
		var order []*Client
		for _, p := range parts {
			c := router.Route(p)
			if _, ok := groups[c]; !ok {
				order = append(order, c)
			}
			groups[c] = append(groups[c], p)
		}
		for _, c := range order {
			active++
			go func() { ends <- s.run(ctx, c, groups[c], wait) }()
		}
	}
	start(slices.Sorted(maps.Keys(next)), opts.MinBackoff)
	var first error
	for active > 0 {
		e := <-ends
		active--
		switch {
		case e.err != nil:
			if first == nil {
				first = e.err
				cancel() // the other streams end too
			}
		case first == nil:
			start(e.parts, e.wait)
		}
	}
	if errors.Is(first, errStopped) {
		return nil
	}
	return first
}

// run reads parts from c until the stream fails: a failure to retry
// (after the backoff) comes back as the parts to route again.
func (s *routedSub) run(ctx context.Context, c *Client, parts []int32, wait time.Duration) routedEnd {
	offs := make(map[int32]int64, len(parts))
	s.mu.Lock()
	for _, p := range parts {
		offs[p] = s.next[p]
	}
	s.mu.Unlock()
	sreq := &floev1.SubscribeRequest{Topic: s.req.GetTopic(), MaxBytes: s.req.GetMaxBytes(), Partitions: parts,
		Offsets: offs, Batches: s.req.GetBatches()}
	progressed := false
	err := c.subscribe(ctx, sreq, s.opts.Lend, func(resp *floev1.SubscribeResponse) error {
		progressed = true
		p := resp.GetPartition()
		if _, ok := offs[p]; !ok {
			return nil // a partition not asked for on this stream: ignore
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		n, err := s.handle(resp, s.next[p])
		s.next[p] = n
		return err
	})
	if err == nil {
		err = io.EOF // a follow stream never ends by itself
	}
	var ce *callerError
	switch {
	case errors.As(err, &ce):
		if errors.Is(ce.err, ErrStop) {
			return routedEnd{err: errStopped}
		}
		return routedEnd{err: ce.err}
	case ctx.Err() != nil:
		return routedEnd{err: ctx.Err()}
	case !s.opts.Retriable(err):
		return routedEnd{err: err}
	}
	if progressed {
		wait = s.opts.MinBackoff
	}
	s.router.MarkDown(c) // its partitions go to the bootstrap agent for DownFor
	if s.opts.OnRetry != nil {
		s.opts.OnRetry(c.Addr(), err, wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return routedEnd{err: ctx.Err()}
	case <-t.C:
	}
	return routedEnd{parts: parts, wait: min(2*wait, s.opts.MaxBackoff)}
}
