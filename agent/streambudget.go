package agent

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
)

// The stream budget bounds, across the whole agent, the bytes streams
// hold for clients that do not read them: what subscriptions have read but
// not sent (each also within its own SubscribeBufferBytes) and the
// requests of produce streams not yet answered. Each subscription is
// bounded on its own, but nothing bounded how many: 30 never-read
// subscriptions on one connection held 1 GB. With the budget spent, a new
// subscription (and the next produce stream request) is refused with
// ResourceExhausted naming stream_buffer_bytes, and the readers of open
// subscriptions wait for room as they wait for their own buffer.

// streamBudget is the agent's stream budget: a semaphore of
// StreamBufferBytes and what of it is held (for the tests and metrics).
type streamBudget struct {
	sem  *semaphore.Weighted
	held atomic.Int64
}

func newStreamBudget(n int64) *streamBudget { return &streamBudget{sem: semaphore.NewWeighted(n)} }

func (b *streamBudget) Acquire(ctx context.Context, n int64) error {
	if err := b.sem.Acquire(ctx, n); err != nil {
		return err
	}
	b.held.Add(n)
	return nil
}

func (b *streamBudget) TryAcquire(n int64) bool {
	if !b.sem.TryAcquire(n) {
		return false
	}
	b.held.Add(n)
	return true
}

func (b *streamBudget) Release(n int64) {
	b.held.Add(-n)
	b.sem.Release(n)
}

// subBuffer is one subscription's buffer: its own bound (SubscribeBufferBytes),
// taken before each read, and the agent's stream budget, taken for what a
// read found to send; both are given back once it is sent.
type subBuffer struct {
	own *semaphore.Weighted
	all *streamBudget
}

// newSubBuffer opens a subscription's buffer, or refuses the subscription
// with ResourceExhausted when the stream budget has no room for one read
// of budget bytes.
func (a *Agent) newSubBuffer(budget int) (*subBuffer, error) {
	// Room for one read now; the readers take theirs as they read.
	if !a.streamMem.sem.TryAcquire(int64(budget)) {
		return nil, a.streamBudgetSpent("subscribe")
	}
	a.streamMem.sem.Release(int64(budget))
	return &subBuffer{own: semaphore.NewWeighted(a.cfg.SubscribeBufferBytes), all: a.streamMem}, nil
}

// streamBudgetSpent is the refusal of a new stream or request, by what.
func (a *Agent) streamBudgetSpent(what string) error {
	return limitError(codes.ResourceExhausted, "stream_buffer_bytes", a.cfg.StreamBufferBytes,
		"%s: the agent's stream buffers (%d bytes, stream_buffer_bytes) are held by streams whose clients do not read; retry later",
		what, a.cfg.StreamBufferBytes)
}

// Acquire takes n bytes of the subscription's own buffer, waiting for
// them (or ctx), before a read.
func (b *subBuffer) Acquire(ctx context.Context, n int64) error { return b.own.Acquire(ctx, n) }

// Hold takes n bytes of the stream budget for a read that found something
// to send, waiting for them (or ctx). Reads that find nothing (idle
// partitions looking) never touch the budget.
func (b *subBuffer) Hold(ctx context.Context, n int64) error { return b.all.Acquire(ctx, n) }

// ReleaseOwn gives back n bytes of the own buffer not held in the budget
// (a read that found nothing, or failed).
func (b *subBuffer) ReleaseOwn(n int64) { b.own.Release(n) }

// Release gives back n bytes of both, once a held message is sent (or
// dropped).
func (b *subBuffer) Release(n int64) {
	b.all.Release(n)
	b.own.Release(n)
}
