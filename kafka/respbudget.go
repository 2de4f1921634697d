package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/semaphore"
)

// What a connection holds is bounded twice by Config.MaxBufferedBytes:
// once for request frames read but not answered (the reader waits for
// room before reading a frame), once for responses made but not yet
// written. A request whose response can be large (a Fetch: up to its
// MaxBytes, capped by the agent's fetch limit) is admitted, in request
// order, only once that bound fits in the response budget, before the
// handler reads anything; the writer gives it back once the response is
// written. So a client that stops reading its socket stops its later
// fetches there, then the reader (TCP backpressure), and the agent holds
// at most about twice MaxBufferedBytes for it (a first batch larger than
// the fetch's MaxBytes is served, as KIP-74 asks, and may go past).
// Admission in request order keeps it deadlock free: whatever an admitted
// response waits for is held by earlier responses, which the writer (in
// request order too) can always write.
//
// Server.BufferedBytes is what every connection actually holds: request
// frames and the record bytes of responses not yet written.

// budget is one connection's semaphore of bytes.
type budget struct {
	sem *semaphore.Weighted
	max int64
}

func newBudget(max int64) *budget { return &budget{sem: semaphore.NewWeighted(max), max: max} }

// Acquire takes n bytes (at most the whole budget), waiting for them.
func (b *budget) Acquire(ctx context.Context, n int64) error {
	return b.sem.Acquire(ctx, min(n, b.max))
}

// Release gives back what Acquire took for n.
func (b *budget) Release(n int64) {
	if n > 0 {
		b.sem.Release(min(n, b.max))
	}
}

// responseBound is how many bytes r's response may need: a fetch's total
// bound; nothing for other requests (their responses are small).
func (c *conn) responseBound(r request) int64 {
	fr, ok := r.req.(*kmsg.FetchRequest)
	if !ok {
		return 0
	}
	n := int64(c.s.be.KafkaLimits().MaxFetchBytes)
	if fr.MaxBytes > 0 {
		n = min(n, int64(fr.MaxBytes))
	}
	return n
}

// admit waits for f's turn (every earlier request admitted) and its bound
// of the response budget, then lets the next request's turn come. False:
// ctx ended first (the connection is closing).
func (c *conn) admit(ctx context.Context, resp *budget, f *inflight) bool {
	defer close(f.turn)
	select {
	case <-f.prev:
	case <-ctx.Done():
		f.respBound = 0
		return false
	}
	if f.respBound == 0 {
		return true
	}
	if err := resp.Acquire(ctx, f.respBound); err != nil {
		f.respBound = 0
		return false
	}
	return true
}

// made counts f's response as held until written.
func (c *conn) made(f *inflight) {
	f.respWeight = responseWeight(f.resp)
	c.s.held.Add(f.respWeight)
}

// responseWeight is a response's record bytes (what makes a response
// large); other responses count as nothing.
func responseWeight(r kmsg.Response) int64 {
	if a, ok := r.(*fetchAnswer); ok {
		return a.size + responseWeight(a.FetchResponse)
	}
	fr, ok := r.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	var n int64
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.RecordBatches))
		}
	}
	return n
}

// BufferedBytes is what every connection holds now: request frames not
// yet answered and the record bytes of responses not yet written.
func (s *Server) BufferedBytes() int64 { return s.held.Load() }

// release gives a request frame's n bytes back.
func (c *conn) release(b *budget, n int64) {
	c.s.held.Add(-n)
	b.Release(n)
}

// written gives f's response bytes back (and what a fetch answer holds
// of the read cache: written or not, it is done with).
func (c *conn) written(b *budget, f *inflight) {
	if a, ok := f.resp.(*fetchAnswer); ok {
		a.release()
	}
	c.s.held.Add(-f.respWeight)
	b.Release(f.respBound)
}
