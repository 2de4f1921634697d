package client

import (
	"context"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Partition affinity (ProducerOptions.PartitionAffinity): the producer
// keeps one inner producer per agent connection a Router hands out, and
// sends each partition's requests on the inner producer of its preferred
// agent. The inner producers share the producer id, epoch and sequences,
// so a request retried on another agent is still recognised by the
// sequencer, which is one for all agents.
//
// Order: a partition has unanswered requests on at most one inner
// producer. When its route changes (a refresh moved it, its agent was
// marked down), the inner producer that holds its requests is drained
// (Flush: answered, retried in order) before the partition's next request
// goes out on the new one. So one producer's records of a partition are
// stored in send order, and OnResult sees each partition's requests in
// send order (not those of different partitions across agents).
//
// Failure: an inner producer whose agent fails a retry with Unavailable
// marks it down in the router and retries on the bootstrap connection
// (Producer.fallback); once drained it is retired, and a later route to
// that agent gets a fresh one. MaxInFlight bounds each inner producer.

// affinity is a Producer's inner producers.
type affinity struct {
	router *Router
	outer  *Producer             // the options, ids and sequences the inner ones share
	subs   map[*Client]*Producer // by the connection each was made for
	order  []*Producer           // subs, in creation order (Flush, Settle)
	owner  map[int32]*Producer   // partition -> the inner producer that last sent it
}

func newAffinity(ctx context.Context, p *Producer) (*affinity, error) {
	r, err := NewRouter(ctx, p.c, p.topic, p.opts.Router)
	if err != nil {
		return nil, err
	}
	return &affinity{router: r, outer: p, subs: map[*Client]*Producer{}, owner: map[int32]*Producer{}}, nil
}

// sub is the inner producer for c, made on first use.
func (a *affinity) sub(c *Client) *Producer {
	if s, ok := a.subs[c]; ok {
		return s
	}
	o := a.outer
	s := &Producer{c: c, home: c, ctx: o.ctx, topic: o.topic, opts: o.opts, producerID: o.producerID, producerEpoch: o.producerEpoch,
		seqs: o.seqs, byID: map[uint64]*prodReq{}, perPart: map[int32]int{}, partitions: o.partitions}
	s.opts.PartitionAffinity = false
	if c != a.router.Bootstrap() {
		s.fallback, s.markDown = a.router.Bootstrap(), a.router.MarkDown
	}
	a.subs[c] = s
	a.order = append(a.order, s)
	return s
}

// retire drops s (it fell back to the bootstrap) once it is drained.
func (a *affinity) retire(s *Producer) error {
	if err := s.Flush(); err != nil {
		return err
	}
	s.Close()
	delete(a.subs, s.home)
	for i, x := range a.order {
		if x == s {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
	for part, o := range a.owner {
		if o == s {
			delete(a.owner, part)
		}
	}
	return nil
}

// send is Producer.Send with affinity.
func (a *affinity) send(partition int32, records []*floev1.Record, tag any) error {
	target := a.sub(a.router.Route(partition)) // partition < 0: the bootstrap's
	if target.c != target.home {
		if err := a.retire(target); err != nil {
			return err
		}
		target = a.sub(a.router.Route(partition))
	}
	if partition >= 0 {
		if o := a.owner[partition]; o != nil && o != target && o.perPart[partition] > 0 {
			if err := o.Flush(); err != nil { // drain before switching
				return err
			}
		}
		a.owner[partition] = target
	}
	if err := target.Send(partition, records, tag); err != nil {
		return err
	}
	for _, s := range a.order {
		if s != target {
			if err := s.poll(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush is Producer.Flush with affinity.
func (a *affinity) flush() error {
	for _, s := range append([]*Producer(nil), a.order...) {
		if err := s.Flush(); err != nil {
			return err
		}
		if s.c != s.home {
			if err := a.retire(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// settle is Producer.Settle with affinity.
func (a *affinity) settle() (failed, unknown []any) {
	for _, s := range a.order {
		f, u := s.Settle()
		failed, unknown = append(failed, f...), append(unknown, u...)
	}
	return failed, unknown
}

// close is Producer.Close with affinity.
func (a *affinity) close() {
	for _, s := range a.order {
		s.Close()
	}
	_ = a.router.Close()
}
