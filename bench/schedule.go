package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Schedule is an open-loop send schedule: record i (from 0) is due at
// Start + i/Rate, whatever happened to the records before it. Rate <= 0
// makes every record due at Start (a closed loop bounded only by the sink's
// in-flight limit).
type Schedule struct {
	Start time.Time
	Rate  float64 // records per second
}

// At returns the intended send time of record i.
func (s Schedule) At(i int64) time.Time {
	if s.Rate <= 0 {
		return s.Start
	}
	return s.Start.Add(time.Duration(float64(i) * float64(time.Second) / s.Rate))
}

// Due returns how many records are due at t: records 0..Due(t)-1.
func (s Schedule) Due(t time.Time) int64 {
	if t.Before(s.Start) {
		return 0
	}
	if s.Rate <= 0 {
		return math.MaxInt64
	}
	return int64(t.Sub(s.Start).Seconds()*s.Rate) + 1
}

// Batch is a run of consecutive records of one producer's schedule, handed
// to a Sink in one call.
type Batch struct {
	Producer int
	// First is the schedule index of Intended[0].
	First int64
	// Intended holds each record's intended send time, unix nanoseconds.
	Intended []int64
	// called is when Generate called Send with it, unix nanoseconds.
	called int64
}

// Sink is one producer connection of the system under test.
type Sink interface {
	// Send hands the batch's records to the system. It may block while
	// the sink's in-flight bound is reached; it must not block once ctx
	// ends. done is called, from any goroutine, once for every range
	// [from, to) of b.Intended as it is acknowledged or fails; the ranges
	// cover the batch exactly once. An error return means nothing of the
	// batch was sent and done will not be called.
	Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error
}

// GenConfig drives Generate.
type GenConfig struct {
	Producer int
	Schedule Schedule
	// MeasureFrom and MeasureTo bound the measured window: records intended
	// in it have their latency recorded, acknowledgements in it count
	// towards throughput.
	MeasureFrom, MeasureTo time.Time
	// StopAt ends the schedule: no record intended at or after it is sent.
	StopAt time.Time
	// Drain is how long after StopAt acknowledgements are waited for.
	Drain time.Duration
	// MaxBatch bounds the records of one Send.
	MaxBatch int
	// Tick is the least time between two Sends (client-side batching); the
	// records due meanwhile go in the next batch. Their latency counts from
	// their intended time, so the tick is part of what is measured.
	Tick time.Duration
	// StopAfter, when positive, ends the schedule once that many records
	// were sent (the catch-up backlog).
	StopAfter int64
	// timing, optional, takes the per-record timing of the measured
	// window (the latency breakdown).
	timing *sendTiming
}

func (c GenConfig) validate() error {
	switch {
	case c.MaxBatch < 1:
		return fmt.Errorf("bench: GenConfig.MaxBatch %d must be at least 1", c.MaxBatch)
	case c.Tick < 0:
		return fmt.Errorf("bench: GenConfig.Tick %v must not be negative", c.Tick)
	case c.Drain < 0:
		return fmt.Errorf("bench: GenConfig.Drain %v must not be negative", c.Drain)
	case c.StopAt.IsZero() && c.StopAfter <= 0:
		return errors.New("bench: GenConfig needs StopAt or StopAfter")
	}
	return nil
}

// Counters are live totals shared by the producers of a run, read by the
// progress line.
type Counters struct {
	Sent, Acked, Failed, Consumed atomic.Int64
}

// GenResult is what one producer measured.
type GenResult struct {
	Sent int64 `json:"sent"`
	// Acked and Failed count every record answered; AckedInWindow those
	// acknowledged within the measured window.
	Acked, Failed, AckedInWindow int64
	// Unacked records were sent but not answered before the drain ended;
	// Unsent records were due but never sent (the sink was still blocked
	// when the schedule ended). Both are recorded in the latency histogram
	// with a lower bound of their latency.
	Unacked, Unsent int64
	// FirstError is the first failure seen.
	FirstError error
}

// Generate runs one producer's open-loop schedule against sink until
// StopAt (or StopAfter records), then waits up to Drain for the
// outstanding acknowledgements. Latencies, measured from each record's
// intended send time, of records intended within the measured window go to
// lat. It returns early, with what it has, when ctx ends.
func Generate(ctx context.Context, cfg GenConfig, sink Sink, lat *Histogram, live *Counters) (GenResult, error) {
	if err := cfg.validate(); err != nil {
		return GenResult{}, err
	}
	if live == nil {
		live = &Counters{}
	}
	var (
		mu       sync.Mutex
		res      GenResult
		inflight sync.WaitGroup
		open     = map[*Batch]int{} // unanswered records per batch
	)
	from, to := cfg.MeasureFrom.UnixNano(), cfg.MeasureTo.UnixNano()
	measured := func(intended int64) bool { return intended >= from && intended < to }
	done := func(b *Batch, lo, hi int, err error) {
		nowNs := time.Now().UnixNano()
		n := int64(hi - lo)
		mu.Lock()
		left, ok := open[b]
		if !ok { // answered after the drain ended: no longer counted
			mu.Unlock()
			return
		}
		if err != nil {
			res.Failed += n
			if res.FirstError == nil {
				res.FirstError = err
			}
		} else {
			res.Acked += n
			if nowNs >= from && nowNs < to {
				res.AckedInWindow += n
			}
			for _, t := range b.Intended[lo:hi] {
				if measured(t) {
					lat.Record(time.Duration(nowNs - t))
					if cfg.timing != nil {
						cfg.timing.answer.Record(time.Duration(nowNs - b.called))
					}
				}
			}
		}
		left -= int(n)
		if left <= 0 {
			delete(open, b)
		} else {
			open[b] = left
		}
		mu.Unlock()
		if err != nil {
			live.Failed.Add(n)
		} else {
			live.Acked.Add(n)
		}
		if left <= 0 {
			inflight.Done()
		}
	}

	var next int64 // the next record to send
	var lastSend time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	wait := func(until time.Time) bool {
		d := time.Until(until)
		if d <= 0 {
			return ctx.Err() == nil
		}
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			if !timer.Stop() {
				<-timer.C
			}
			return false
		}
	}
	sched := cfg.Schedule
	for ctx.Err() == nil {
		if cfg.StopAfter > 0 && next >= cfg.StopAfter {
			break
		}
		if !cfg.StopAt.IsZero() && (!sched.At(next).Before(cfg.StopAt) || !time.Now().Before(cfg.StopAt)) {
			break
		}
		// Wait for the next record's intended time and the batching tick.
		until := sched.At(next)
		if t := lastSend.Add(cfg.Tick); t.After(until) {
			until = t
		}
		if !cfg.StopAt.IsZero() && until.After(cfg.StopAt) {
			until = cfg.StopAt
		}
		if !wait(until) {
			break
		}
		now := time.Now()
		due := sched.Due(now)
		if cfg.StopAfter > 0 && due > cfg.StopAfter {
			due = cfg.StopAfter
		}
		if !cfg.StopAt.IsZero() {
			if end := sched.Due(cfg.StopAt.Add(-time.Nanosecond)); due > end {
				due = end
			}
		}
		if due <= next {
			continue
		}
		n := int(min(due-next, int64(cfg.MaxBatch)))
		b := &Batch{Producer: cfg.Producer, First: next, Intended: make([]int64, n)}
		for i := range n {
			if sched.Rate <= 0 {
				// Closed loop: a record is intended when it can be sent.
				b.Intended[i] = now.UnixNano()
			} else {
				b.Intended[i] = sched.At(next + int64(i)).UnixNano()
			}
		}
		mu.Lock()
		open[b] = n
		mu.Unlock()
		inflight.Add(1)
		lastSend = now
		b.called = time.Now().UnixNano()
		inWindow := cfg.timing != nil && measured(b.Intended[0])
		if inWindow {
			for _, t := range b.Intended {
				cfg.timing.lag.Record(time.Duration(b.called - t))
			}
		}
		// Send may block on the sink's in-flight bound: the schedule is not
		// paused meanwhile, the records falling due go in the next batches.
		err := sink.Send(ctx, b, func(lo, hi int, err error) { done(b, lo, hi, err) })
		if inWindow {
			cfg.timing.call.Record(time.Duration(time.Now().UnixNano() - b.called))
		}
		if err != nil {
			mu.Lock()
			delete(open, b)
			res.Failed += int64(n)
			if res.FirstError == nil {
				res.FirstError = err
			}
			mu.Unlock()
			live.Failed.Add(int64(n))
			inflight.Done()
			if ctx.Err() != nil {
				break
			}
			continue
		}
		next += int64(n)
		mu.Lock()
		res.Sent += int64(n)
		mu.Unlock()
		live.Sent.Add(int64(n))
	}
	stopped := time.Now()

	// Records due but never sent: their latency is at least stopped - intended.
	if !cfg.StopAt.IsZero() && cfg.StopAfter <= 0 {
		end := sched.Due(cfg.StopAt.Add(-time.Nanosecond))
		if sched.Rate > 0 && end > next {
			res.Unsent = end - next
			for i := next; i < end; i++ {
				if t := sched.At(i).UnixNano(); measured(t) {
					lat.Record(stopped.Sub(sched.At(i)))
				}
			}
		}
	}

	// Drain: wait for the outstanding acknowledgements, up to Drain.
	drained := make(chan struct{})
	go func() { inflight.Wait(); close(drained) }()
	dctx, cancel := context.WithTimeout(context.Background(), cfg.Drain)
	defer cancel()
	select {
	case <-drained:
	case <-dctx.Done():
	case <-ctx.Done():
	}
	mu.Lock()
	// What is still open is unacknowledged: record a lower bound.
	now := time.Now().UnixNano()
	for b, left := range open {
		res.Unacked += int64(left)
		for _, t := range b.Intended[len(b.Intended)-left:] {
			if measured(t) {
				lat.Record(time.Duration(now - t))
			}
		}
		inflight.Done()
	}
	clear(open) // late answers no longer count
	out := res
	mu.Unlock()
	<-drained
	return out, nil
}
