package chaos

import (
	"context"
	"math/rand/v2"
	"time"
)

// Link is a slow, lossy network between floe and a store, made by the
// proxies (the kernel's netem qdisc, which would make it on the wire, is
// not in every kernel: docs/chaos.md). Over TCP a lost or reordered packet
// is not seen by the application as such: TCP retransmits the lost one
// after its retransmission timeout and holds the ones after a gap until
// it is filled, so the application sees its bytes late, in order. The
// proxies make that: each burst of messages (PostgreSQL) or request (S3)
// waits Latency plus up to Jitter (reordering, as the application sees
// it) and, with probability Loss, a retransmission stall of 200 ms to
// 1.2 s. The zero Link is a perfect one.
type Link struct {
	Latency, Jitter time.Duration
	Loss            float64
}

// retransmitStall bounds a lost packet's stall: Linux's minimum
// retransmission timeout is 200 ms, and it doubles.
const (
	minRetransmitStall = 200 * time.Millisecond
	maxRetransmitStall = 1200 * time.Millisecond
)

// delay is how long one burst waits on the link (draws from rng).
func (l Link) delay(rng *rand.Rand) time.Duration {
	d := l.Latency
	if l.Jitter > 0 {
		d += time.Duration(rng.Int64N(int64(l.Jitter)))
	}
	if l.Loss > 0 && rng.Float64() < l.Loss {
		d += minRetransmitStall + time.Duration(rng.Int64N(int64(maxRetransmitStall-minRetransmitStall)))
	}
	return d
}

// wait sleeps one burst's delay, or until ctx ends.
func (l Link) wait(ctx context.Context) {
	if l == (Link{}) {
		return
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	sleep(ctx, l.delay(rng))
}

// slowLink is the link of the pg-slow-link and s3-slow-link faults: 20-120
// ms each way, up to 80 ms of jitter, 5% of bursts lost once.
func slowLink(rng *rand.Rand) Link {
	return Link{Latency: time.Duration(20+rng.IntN(100)) * time.Millisecond, Jitter: 80 * time.Millisecond, Loss: 0.05}
}
