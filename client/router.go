package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// A Router learns, from one bootstrap agent, the live agents and each
// partition's preferred agent (TopicService.DescribePlacement: the rule
// the Kafka listener's Metadata names leaders by), and hands out a
// connection to that agent for each partition. Producers that follow it
// send each partition to one agent, whose batcher alone then writes it:
// two agents no longer wait on each other's row locks in the sequencer.
//
// A preference, never a requirement: every agent accepts every partition,
// so whatever is unknown goes to the bootstrap agent: a partition whose
// agent names no gRPC address, an agent marked down (MarkDown) for
// RouterOptions.DownFor, agents past RouterOptions.MaxAgents, everything
// when the bootstrap agent answers no agents (it runs no Kafka listener,
// which keeps the agents table) or predates DescribePlacement.

// RouterOptions tunes a Router. Zero fields take the defaults.
type RouterOptions struct {
	// Zone is the client's availability zone: partitions prefer that
	// zone's agents when one is in it.
	Zone string
	// Refresh is how often the placement is asked again (default 5 s, at
	// least 100 ms): agents that join get their partitions, agents gone
	// from the agents table lose theirs, within it.
	Refresh time.Duration
	// DownFor is how long an agent a call failed on is avoided (default
	// 10 s: the agents table's default ttl, after which a dead agent is
	// gone from the placement).
	DownFor time.Duration
	// MaxAgents bounds the connections the router dials (default 64).
	// Connections stay open until Close (a producer may still be
	// draining one); partitions of agents past the bound go to the
	// bootstrap agent.
	MaxAgents int
}

func (o RouterOptions) withDefaults() RouterOptions {
	if o.Refresh <= 0 {
		o.Refresh = 5 * time.Second
	}
	o.Refresh = max(o.Refresh, 100*time.Millisecond)
	if o.DownFor <= 0 {
		o.DownFor = 10 * time.Second
	}
	if o.MaxAgents <= 0 {
		o.MaxAgents = 64
	}
	return o
}

// Router routes one topic's partitions. Safe for concurrent use.
type Router struct {
	boot  *Client
	topic string
	opts  RouterOptions

	mu     sync.Mutex           // guards conns, routes, down, closed
	conns  map[string]*Client   // dialed agents by gRPC address (never the bootstrap)
	routes []string             // partition -> preferred agent's address ("": the bootstrap)
	down   map[string]time.Time // address -> avoided until
	closed bool

	cancel context.CancelFunc
	done   chan struct{} // closed when the refresher has returned
}

// NewRouter learns the topic's placement from boot and keeps it fresh in
// a goroutine until Close. It fails only if the bootstrap agent refuses
// the question (an unknown topic, a denied DESCRIBE); an agent that
// cannot answer it (unreachable, or an older release) leaves every
// partition on the bootstrap agent until a refresh succeeds.
func NewRouter(ctx context.Context, boot *Client, topic string, opts RouterOptions) (*Router, error) {
	r := &Router{boot: boot, topic: topic, opts: opts.withDefaults(), conns: map[string]*Client{}, down: map[string]time.Time{}, done: make(chan struct{})}
	if err := r.Refresh(ctx); err != nil && !Retriable(err) && status.Code(err) != codes.Unimplemented {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go r.refresher(rctx)
	return r, nil
}

func (r *Router) refresher(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.opts.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failure keeps the last routes; MarkDown covers dead agents.
			_ = r.Refresh(ctx)
		}
	}
}

// Refresh asks the bootstrap agent for the placement now.
func (r *Router) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Refresh)
	defer cancel()
	resp, err := r.boot.Topics.DescribePlacement(ctx, &floev1.DescribePlacementRequest{Topic: r.topic, Zone: r.opts.Zone})
	if err != nil {
		return fmt.Errorf("client: describe placement of %q: %w", r.topic, err)
	}
	addrOf := map[int32]string{}
	for _, a := range resp.GetAgents() {
		addrOf[a.GetNodeId()] = a.GetGrpcAddress()
	}
	routes := make([]string, len(resp.GetPartitionAgents()))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("client: router closed")
	}
	var errs []error
	for p, node := range resp.GetPartitionAgents() {
		addr := addrOf[node]
		if addr == "" || addr == r.boot.Addr() {
			continue
		}
		if _, ok := r.conns[addr]; !ok {
			if len(r.conns) >= r.opts.MaxAgents {
				continue
			}
			c, err := Dial(addr, r.boot.dial...)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			r.conns[addr] = c
		}
		routes[p] = addr
	}
	r.routes = routes
	return errors.Join(errs...)
}

// Route is the connection to send partition's requests on: its preferred
// agent's, or the bootstrap agent's.
func (r *Router) Route(partition int32) *Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	if partition < 0 || int(partition) >= len(r.routes) {
		return r.boot
	}
	addr := r.routes[partition]
	if addr == "" || time.Now().Before(r.down[addr]) {
		return r.boot
	}
	return r.conns[addr]
}

// MarkDown routes c's partitions to the bootstrap agent for DownFor (a
// call on c failed as if its agent were gone). No-op for the bootstrap.
func (r *Router) MarkDown(c *Client) {
	if c == r.boot {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down[c.Addr()] = time.Now().Add(r.opts.DownFor)
}

// Bootstrap is the connection the router was made with.
func (r *Router) Bootstrap() *Client { return r.boot }

// Close stops the refreshes and closes the connections the router dialed
// (not the bootstrap's).
func (r *Router) Close() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for addr, c := range r.conns {
		errs = append(errs, c.Close())
		delete(r.conns, addr)
	}
	return errors.Join(errs...)
}
