package bench

import (
	"context"
	"errors"
	"slices"
	"sync"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/kpartition"
)

// FloeConfig.Affinity: a producer keeps one stream per agent and sends
// each partition's batches on the stream of the agent DescribePlacement
// prefers for it (client.Router), so one agent writes each partition. A
// batch of the schedule (records keyed over every partition) becomes one
// request per agent; each record's range is reported when its request is
// answered. MaxInFlight bounds each agent's stream. Consumers
// (FloeSystem.Consume) read each partition from the same agent through the
// same router (client.SubscribeAffinityBatches), so an agent's read cache
// holds the files it wrote and no agent loads files of others' partitions.

// router is the topic's routes, made on first use after Setup.
func (s *FloeSystem) routerFor(ctx context.Context) (*client.Router, error) {
	s.routerMu.Lock()
	defer s.routerMu.Unlock()
	if s.router == nil {
		r, err := client.NewRouter(ctx, s.clients[0], s.topic, client.RouterOptions{})
		if err != nil {
			return nil, err
		}
		s.router = r
	}
	return s.router, nil
}

func (s *FloeSystem) closeRouter() error {
	s.routerMu.Lock()
	defer s.routerMu.Unlock()
	if s.router == nil {
		return nil
	}
	err := s.router.Close()
	s.router = nil
	return err
}

func (s *FloeSystem) newRoutedProducer(ctx context.Context, i int) (Producer, error) {
	r, err := s.routerFor(ctx)
	if err != nil {
		return nil, err
	}
	return &routedProducer{sys: s, router: r, id: i, subs: map[*client.Client]*floeProducer{}, arena: recordArena{size: s.cfg.RecordSize}}, nil
}

// routedProducer is one floeProducer per agent connection.
type routedProducer struct {
	sys    *FloeSystem
	router *client.Router
	id     int
	arena  recordArena // Send's records (its Sends are sequential)

	mu   sync.Mutex // guards subs
	subs map[*client.Client]*floeProducer
}

func (p *routedProducer) sub(c *client.Client) *floeProducer {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.subs[c]
	if !ok {
		s = p.sys.newFloeProducer(c, p.id)
		p.subs[c] = s
	}
	return s
}

// Send implements Sink: b's records split by their partition's agent.
func (p *routedProducer) Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error {
	recs := p.arena.records(uint64(p.id), b)
	type group struct {
		recs []*floev1.Record
		idx  []int
	}
	groups := map[*client.Client]*group{}
	var order []*client.Client
	for i, r := range recs {
		c := p.router.Route(kpartition.ForKey(r.GetKey(), p.sys.parts))
		g, ok := groups[c]
		if !ok {
			g = &group{}
			groups[c] = g
			order = append(order, c)
		}
		g.recs, g.idx = append(g.recs, r), append(g.idx, i)
	}
	touched := false // done called or a request sent: no error return now
	for _, c := range order {
		g, s := groups[c], p.sub(c)
		report := func(err error) {
			for j := 0; j < len(g.idx); { // each run of consecutive indices once
				k := j + 1
				for k < len(g.idx) && g.idx[k] == g.idx[k-1]+1 {
					k++
				}
				done(g.idx[j], g.idx[k-1]+1, err)
				j = k
			}
		}
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			if !touched {
				return ctx.Err()
			}
			report(ctx.Err())
			continue
		}
		if err := s.sendRecs(g.recs, report); err != nil {
			if !touched {
				return err // nothing of b sent
			}
			report(err)
			continue
		}
		touched = true
	}
	return nil
}

// Close implements Sink: every agent's stream drained.
func (p *routedProducer) Close(ctx context.Context) error {
	p.mu.Lock()
	subs := make([]*floeProducer, 0, len(p.subs))
	for _, s := range p.subs {
		subs = append(subs, s)
	}
	p.mu.Unlock()
	var errs []error
	for _, s := range subs {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

// affinityShare is consumer i's of n share of the partitions, owner[p]
// naming partition p's preferred agent: whole agents' partitions where
// there are no more consumers than agents (consumer i takes the agents
// i, i+n, ... in the order of their smallest partition), else each
// agent's partitions split over the consumers it gets (consumer i reads
// agent i%agents). So each agent's files, which hold only its
// partitions, are read by as few consumers as may be: two consumers
// reading disjoint partitions of one agent's files at their own pace
// would each make its read cache hold or fetch every file.
func affinityShare(owner []string, i, n int) []int32 {
	var agents []string // in the order of their smallest partition
	parts := map[string][]int32{}
	for p, o := range owner {
		if _, ok := parts[o]; !ok {
			agents = append(agents, o)
		}
		parts[o] = append(parts[o], int32(p))
	}
	var out []int32
	if n <= len(agents) {
		for k := i; k < len(agents); k += n {
			out = append(out, parts[agents[k]]...)
		}
		slices.Sort(out)
		return out
	}
	k := i % len(agents)
	m := (n - k + len(agents) - 1) / len(agents) // consumers c < n with c%len(agents) == k
	for j, p := range parts[agents[k]] {
		if j%m == i/len(agents) {
			out = append(out, p)
		}
	}
	return out
}
