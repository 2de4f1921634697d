package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Retriable reports whether a call that failed with err may succeed if
// tried again, on the same agent or another: the codes of a store or agent
// outage (Unavailable), a lost connection or an unexpected failure
// (Unknown, Internal), backpressure (ResourceExhausted), Aborted, and a
// deadline of the call itself (DeadlineExceeded). A plain error that is
// not a gRPC status (io.EOF: the stream ended) is retriable too. The
// caller's context ending is not: check it first.
func Retriable(err error) bool {
	if errors.Is(err, io.EOF) {
		return true
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.Unknown, codes.Internal, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
		return true
	}
	return false
}

// ResumeOptions tunes SubscribeResume. The zero value is usable.
type ResumeOptions struct {
	// MinBackoff is the wait after the first failure (default 100 ms);
	// each further failure in a row doubles it, up to MaxBackoff (default
	// 5 s). A message received resets it.
	MinBackoff, MaxBackoff time.Duration
	// Retriable decides which failures resubscribe (default Retriable).
	Retriable func(error) bool
	// OnRetry, optional, is told of each failure before the wait, with the
	// address that failed.
	OnRetry func(addr string, err error, wait time.Duration)
	// Lend, for SubscribeAffinityBatches only: each answer fn gets, and
	// everything it references, is valid only until fn returns (as for
	// Client.SubscribeLent): its receive buffer is reused.
	Lend bool
}

func (o ResumeOptions) withDefaults() ResumeOptions {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(5*time.Second, o.MinBackoff)
	}
	if o.Retriable == nil {
		o.Retriable = Retriable
	}
	return o
}

// SubscribeResume is Subscribe that survives agent and store outages. It
// first resolves req's start position into one offset per partition, then
// subscribes from those offsets through clients[0]. When the stream fails
// with an error opts.Retriable accepts, it waits (capped exponential
// backoff) and subscribes again through the next client, from the offset
// after the last record handed to fn in each partition: fn sees every
// record once, in offset order per partition, with no gap. Records below
// that offset in an answer (never expected) are dropped. With req.Batches
// the agent streams stored batches; fn still sees records (decoded here,
// those below the offset asked for left out).
//
// It returns when fn returns an error (nil for ErrStop), ctx ends
// (ctx.Err()), or a failure is not retriable (that error).
func SubscribeResume(ctx context.Context, clients []*Client, req *floev1.SubscribeRequest, opts ResumeOptions,
	fn func(*floev1.SubscribeResponse) error) error {
	if len(clients) == 0 {
		return errors.New("client: SubscribeResume needs at least one client")
	}
	opts = opts.withDefaults()
	r := &resumer{clients: clients, opts: opts, wait: opts.MinBackoff}
	next, err := r.resolve(ctx, req) // partition -> offset of the next record due
	if err != nil {
		return err
	}
	return r.do(ctx, func(c *Client) error {
		sreq := &floev1.SubscribeRequest{Topic: req.GetTopic(), MaxBytes: req.GetMaxBytes(),
			Partitions: slices.Sorted(maps.Keys(next)), Offsets: maps.Clone(next), Batches: req.GetBatches()}
		err := c.Subscribe(ctx, sreq, func(resp *floev1.SubscribeResponse) error {
			r.wait = opts.MinBackoff // progress: the next failure waits little
			p := resp.GetPartition()
			from, ok := next[p]
			if !ok {
				return nil // a partition not asked for: ignore
			}
			n, err := handOver(resp, from, fn)
			next[p] = n
			return err
		})
		if err == nil {
			err = io.EOF // a follow stream never ends by itself
		}
		return err
	})
}

// handOver hands fn resp's records from offset from on (in batches mode
// decoded, so fn sees records) and returns the partition's next offset.
// Records below from in an answer (never expected) are dropped; fn's
// error comes back as a callerError.
func handOver(resp *floev1.SubscribeResponse, from int64, fn func(*floev1.SubscribeResponse) error) (int64, error) {
	p := resp.GetPartition()
	if len(resp.GetBatches()) > 0 {
		recs, err := DecodeBatches(resp.GetBatches(), p, from, 0)
		if err != nil {
			return from, &callerError{err}
		}
		next := max(from, resp.GetNextOffset())
		if len(recs) == 0 {
			return next, nil
		}
		return next, callFn(fn, &floev1.SubscribeResponse{Partition: p, Records: recs, HighWatermark: resp.GetHighWatermark(), NextOffset: resp.GetNextOffset()})
	}
	recs := resp.GetRecords()
	keep := recs[:0:0]
	for i, rec := range recs {
		if rec.GetOffset() >= from {
			keep = recs[i:]
			break
		}
	}
	if len(keep) < len(recs) {
		resp = &floev1.SubscribeResponse{Partition: p, Records: keep, HighWatermark: resp.GetHighWatermark()}
	}
	next := from
	if len(keep) > 0 {
		next = keep[len(keep)-1].GetOffset() + 1
	}
	return next, callFn(fn, resp)
}

// callFn calls the caller's callback, marking its error.
func callFn(fn func(*floev1.SubscribeResponse) error, resp *floev1.SubscribeResponse) error {
	if err := fn(resp); err != nil {
		return &callerError{err}
	}
	return nil
}

// resumer runs steps through its clients in turn, retrying retriable
// failures with backoff.
type resumer struct {
	clients []*Client
	opts    ResumeOptions
	cur     int           // index of the client to use
	wait    time.Duration // the next backoff
}

// callerError carries an error of the caller's callback through do.
type callerError struct{ err error }

func (e *callerError) Error() string { return e.err.Error() }

func (r *resumer) do(ctx context.Context, step func(*Client) error) error {
	for {
		c := r.clients[r.cur]
		err := step(c)
		if err == nil {
			return nil
		}
		var ce *callerError
		if errors.As(err, &ce) {
			if errors.Is(ce.err, ErrStop) {
				return nil
			}
			return ce.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !r.opts.Retriable(err) {
			return err
		}
		if r.opts.OnRetry != nil {
			r.opts.OnRetry(c.Addr(), err, r.wait)
		}
		t := time.NewTimer(r.wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		r.wait = min(2*r.wait, r.opts.MaxBackoff)
		r.cur = (r.cur + 1) % len(r.clients)
	}
}

// ResolveOffsets turns a subscription's start into one offset per
// partition: req.Offsets where given, else req.Start resolved by
// ListOffsets (no start means latest, as Subscribe does). Without
// req.Partitions it covers every partition of the topic.
func (c *Client) ResolveOffsets(ctx context.Context, req *floev1.SubscribeRequest) (map[int32]int64, error) {
	out := map[int32]int64{}
	var missing []int32
	if len(req.GetPartitions()) > 0 {
		for _, p := range req.GetPartitions() {
			if off, ok := req.GetOffsets()[p]; ok {
				out[p] = off
			} else {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return out, nil
		}
	}
	lreq := &floev1.ListOffsetsRequest{Topic: req.GetTopic(), Partitions: missing, Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST}
	fixed, hasFixed := int64(0), false
	switch p := req.GetStart().GetPosition().(type) {
	case *floev1.StartPosition_Earliest:
		lreq.Spec = floev1.OffsetSpec_OFFSET_SPEC_EARLIEST
	case *floev1.StartPosition_TimestampMs:
		lreq.Spec, lreq.TimestampMs = floev1.OffsetSpec_OFFSET_SPEC_TIMESTAMP, p.TimestampMs
	case *floev1.StartPosition_Offset:
		fixed, hasFixed = p.Offset, true
	}
	resp, err := c.Log.ListOffsets(ctx, lreq)
	if err != nil {
		return nil, err
	}
	for _, po := range resp.GetOffsets() {
		p := po.GetPartition()
		if _, ok := out[p]; ok {
			continue
		}
		switch off, ok := req.GetOffsets()[p]; {
		case ok:
			out[p] = off
		case hasFixed:
			out[p] = fixed
		default:
			out[p] = po.GetOffset()
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("client: topic %q: no partitions", req.GetTopic())
	}
	return out, nil
}

// resolve turns req's partitions and start into each partition's next
// offset due, retried like any call of r; no partition is an error.
func (r *resumer) resolve(ctx context.Context, req *floev1.SubscribeRequest) (map[int32]int64, error) {
	var next map[int32]int64
	err := r.do(ctx, func(c *Client) error {
		var err error
		next, err = c.ResolveOffsets(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(next) == 0 {
		return nil, errors.New("client: subscribe: no partition to read")
	}
	return next, nil
}
