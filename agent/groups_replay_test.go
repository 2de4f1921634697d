package agent_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/objectstore"
)

// tailLatency produces one record to "live" every 10 ms for d and returns
// the produce-to-delivery latencies a tailing subscription saw.
func tailLatency(ctx context.Context, t *testing.T, prod, c *client.Client, d time.Duration) []time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex // protects sent and lat
		sent = map[int64]time.Time{}
		lat  []time.Duration
		wg   sync.WaitGroup
	)
	ready := make(chan struct{})
	wg.Go(func() {
		_ = c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "live"}, func(r *floev1.SubscribeResponse) error {
			now := time.Now()
			mu.Lock()
			for _, rec := range r.GetRecords() {
				if s, ok := sent[rec.GetTimestampMs()]; ok {
					lat = append(lat, now.Sub(s))
				}
			}
			mu.Unlock()
			return nil
		})
	})
	go func() { time.Sleep(200 * time.Millisecond); close(ready) }() // the subscription reaches the tail
	<-ready
	end := time.Now().Add(d)
	for i := int64(1); time.Now().Before(end); i++ {
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if _, err := prod.Produce(ctx, "live", 0, &floev1.Record{Value: []byte("x"), TimestampMs: i}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	return lat
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(float64(len(lat))*p))].Round(100 * time.Microsecond)
}

// replay consumes "big" with group g from the earliest offset until ctx
// ends and returns the record bytes it got.
func replay(ctx context.Context, t *testing.T, c *client.Client) int64 {
	g, err := client.NewGroupConsumer([]*client.Client{c}, client.GroupOptions{Group: "replayer", Topic: "big", Earliest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Abort()
	var n int64
	for {
		rec, err := g.Poll(ctx)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return n
		}
		if err != nil {
			t.Error(err)
			return n
		}
		n += int64(len(rec.GetValue()))
	}
}

// narrowLink is an object store behind a link of limited bandwidth: the
// bytes of every Get take their turn on one token bucket.
type narrowLink struct {
	objectstore.Store
	lim *rate.Limiter
}

func (l narrowLink) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	b, err := l.Store.Get(ctx, key, off, length)
	for n := len(b); err == nil && n > 0; n -= l.lim.Burst() {
		err = l.lim.WaitN(ctx, min(n, l.lim.Burst()))
	}
	return b, err
}

// A group replaying a backlog far behind the head reads through its replay
// budget, so it gets no more than the budget's bytes (here 2 MiB/s with a
// 1 MiB bucket). Records are produced through agent P and read through
// agent R, whose object store link carries 8 MiB/s: a tailing
// subscription on R reads each new file through that link, beside the
// replay. Its latency is logged with and without the budget, not
// asserted.
func TestReplayBudget(t *testing.T) {
	const (
		link    = 8 << 20
		budget  = 2 << 20
		burst   = 1 << 20
		backlog = 16 << 20
		window  = 2 * time.Second
	)
	run := func(limited bool) (replayed int64, base, during []time.Duration) {
		dsn := testenv.Postgres(t)
		mem := objectstore.NewMemory()
		p := startKillable(t, openPostgres(t, dsn), mem, groupConfig())
		acfg := groupConfig()
		acfg.MaxFetchBytes = 1 << 20
		acfg.SubscribeBufferBytes = 2 << 20
		acfg.CacheBytes = 2 << 20
		acfg.ReplayMinLagRecords = 100
		acfg.ReplayBytesPerSecond, acfg.ReplayBurstBytes = 0, 0
		if limited {
			acfg.ReplayBytesPerSecond, acfg.ReplayBurstBytes = budget, burst
		}
		r := startKillable(t, openPostgres(t, dsn), narrowLink{mem, rate.NewLimiter(link, 64<<10)}, acfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, tp := range []string{"big", "live"} {
			if _, err := p.c.CreateTopic(ctx, tp, 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		val := bytes.Repeat([]byte("r"), 4096)
		var recs []*floev1.Record
		for range 256 {
			recs = append(recs, client.Value(nil, val))
		}
		for range backlog / (256 * 4096) {
			if _, err := p.c.Produce(ctx, "big", 0, recs...); err != nil {
				t.Fatal(err)
			}
		}
		base = tailLatency(ctx, t, p.c, r.c, window)
		rctx, rcancel := context.WithTimeout(ctx, window+300*time.Millisecond)
		defer rcancel()
		var got atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() { got.Store(replay(rctx, t, r.c)) })
		during = tailLatency(ctx, t, p.c, r.c, window)
		wg.Wait()
		return got.Load(), base, during
	}
	limited, base, during := run(true)
	t.Logf("budget %d MiB/s: replayed %.1f MiB in %v; tail latency p50/p99 %v/%v alone, %v/%v beside the replay",
		budget>>20, float64(limited)/(1<<20), window+300*time.Millisecond, pct(base, .5), pct(base, .99), pct(during, .5), pct(during, .99))
	unlimited, base, during := run(false)
	t.Logf("no budget: replayed %.1f MiB in %v; tail latency p50/p99 %v/%v alone, %v/%v beside the replay",
		float64(unlimited)/(1<<20), window+300*time.Millisecond, pct(base, .5), pct(base, .99), pct(during, .5), pct(during, .99))
	// The bucket's burst, then the rate; one read of up to MaxFetchBytes
	// may be charged after it was handed over.
	if max := int64(burst + budget*(window+300*time.Millisecond).Seconds() + 1<<20); limited > max {
		t.Fatalf("replayed %d bytes through a budget that allows %d", limited, max)
	}
	// The bucket starts full: the first burst's worth passes at the
	// link's speed (an eighth of a second here) and needs no refill, so a
	// replay that got less was held back by something else than the
	// budget. (What each read is charged, exactly: TestReplayWaitChargesExactly.)
	if limited < burst {
		t.Fatalf("replayed %d bytes, less than the bucket's burst of %d", limited, burst)
	}
	if unlimited < burst {
		t.Fatalf("replayed %d bytes with no budget, less than %d", unlimited, burst)
	}
}
