package bench

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestScheduleAtAndDue(t *testing.T) {
	start := time.Unix(100, 0)
	s := Schedule{Start: start, Rate: 1000}
	if got := s.At(0); !got.Equal(start) {
		t.Fatalf("At(0) = %v, want %v", got, start)
	}
	if got := s.At(1500); !got.Equal(start.Add(1500 * time.Millisecond)) {
		t.Fatalf("At(1500) = %v", got)
	}
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{-time.Millisecond, 0}, {0, 1}, {999 * time.Microsecond, 1}, {time.Millisecond, 2}, {time.Second, 1001}} {
		if got := s.Due(start.Add(c.at)); got != c.want {
			t.Errorf("Due(start+%v) = %d, want %d", c.at, got, c.want)
		}
	}
	closed := Schedule{Start: start}
	if closed.Due(start) < 1<<62 || !closed.At(7).Equal(start) {
		t.Fatalf("a closed-loop schedule should have everything due at Start")
	}
}

// fakeSink acknowledges batches through a hook deciding when.
type fakeSink struct {
	mu      sync.Mutex
	batches int
	records int
	// sendDelay, if set, blocks Send (backpressure) and returns how long.
	sendDelay func(b *Batch) time.Duration
	// ackAt returns when to acknowledge a batch; zero time means never.
	ackAt func(b *Batch) time.Time
	wg    sync.WaitGroup
}

func (s *fakeSink) Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error {
	if s.sendDelay != nil {
		if d := s.sendDelay(b); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	s.mu.Lock()
	s.batches++
	s.records += len(b.Intended)
	s.mu.Unlock()
	at := time.Now()
	if s.ackAt != nil {
		at = s.ackAt(b)
	}
	if at.IsZero() {
		return nil // never answered
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		time.Sleep(time.Until(at))
		done(0, len(b.Intended), nil)
	}()
	return nil
}

func genConfig(start time.Time, rate float64, d time.Duration) GenConfig {
	return GenConfig{
		Schedule: Schedule{Start: start, Rate: rate}, MeasureFrom: start, MeasureTo: start.Add(d),
		StopAt: start.Add(d), Drain: 2 * time.Second, MaxBatch: 100, Tick: time.Millisecond,
	}
}

// A broker that stalls its acknowledgements for 300 ms: the records
// intended during the stall get latencies that include it, and the
// schedule goes on meanwhile.
func TestGenerateStalledAcksAreMeasuredFromIntendedTime(t *testing.T) {
	start := time.Now().Add(20 * time.Millisecond)
	stallFrom, stallTo := start.Add(200*time.Millisecond), start.Add(500*time.Millisecond)
	sink := &fakeSink{ackAt: func(b *Batch) time.Time {
		now := time.Now()
		if now.After(stallFrom) && now.Before(stallTo) {
			return stallTo
		}
		return now
	}}
	lat := NewHistogram()
	res, err := Generate(context.Background(), genConfig(start, 1000, time.Second), sink, lat, nil)
	sink.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent < 990 || res.Sent > 1001 || res.Acked != res.Sent || res.Unacked != 0 {
		t.Fatalf("sent %d, acked %d, unacked %d; want about 1000 all acknowledged", res.Sent, res.Acked, res.Unacked)
	}
	s := lat.Summary()
	if s.Count != res.Sent {
		t.Fatalf("recorded %d latencies, want %d", s.Count, res.Sent)
	}
	// ~30% of the records were intended during the stall; the first of
	// them waited ~300 ms.
	if s.MaxMs < 270 || s.P90Ms < 50 {
		t.Fatalf("latencies hide the stall: %+v", s)
	}
	if s.P50Ms > 20 {
		t.Fatalf("records outside the stall should be quick: %+v", s)
	}
}

// A sink whose Send blocks for 300 ms (backpressure) must not pause the
// schedule: the records due meanwhile are sent late, in the next batches,
// and their latency counts from when they were due.
func TestGenerateBlockedSendDoesNotPauseSchedule(t *testing.T) {
	start := time.Now().Add(20 * time.Millisecond)
	var once sync.Once
	sink := &fakeSink{sendDelay: func(b *Batch) time.Duration {
		var d time.Duration
		if time.Now().After(start.Add(300 * time.Millisecond)) {
			once.Do(func() { d = 300 * time.Millisecond })
		}
		return d
	}}
	lat := NewHistogram()
	res, err := Generate(context.Background(), genConfig(start, 1000, time.Second), sink, lat, nil)
	sink.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent < 990 {
		t.Fatalf("sent %d records, want the whole schedule (~1000): the stall paused the generator", res.Sent)
	}
	s := lat.Summary()
	if s.MaxMs < 280 {
		t.Fatalf("max latency %.1f ms, want >= the 300 ms stall", s.MaxMs)
	}
	// About 300 records were due during the stall: more than 10% of all.
	if q := lat.Quantile(0.9); q < 20*time.Millisecond {
		t.Fatalf("p90 %v: the records held back by the stall were not measured from their intended time", q)
	}
}

// Records never answered count as unacknowledged, with a lower bound of
// their latency, and Generate returns after the drain.
func TestGenerateUnansweredRecords(t *testing.T) {
	start := time.Now()
	sink := &fakeSink{ackAt: func(*Batch) time.Time { return time.Time{} }}
	cfg := genConfig(start, 500, 200*time.Millisecond)
	cfg.Drain = 100 * time.Millisecond
	lat := NewHistogram()
	t0 := time.Now()
	res, err := Generate(context.Background(), cfg, sink, lat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("Generate took %v with a 100 ms drain", el)
	}
	if res.Sent == 0 || res.Unacked != res.Sent || res.Acked != 0 {
		t.Fatalf("sent %d, unacked %d, acked %d", res.Sent, res.Unacked, res.Acked)
	}
	if s := lat.Summary(); s.Count != res.Sent || s.P50Ms < 100 {
		t.Fatalf("unanswered records should be recorded at >= the drain: %+v", s)
	}
}

// A closed loop stops at StopAt and measures from the send time.
func TestGenerateClosedLoop(t *testing.T) {
	start := time.Now()
	sink := &fakeSink{ackAt: func(*Batch) time.Time { return time.Now().Add(2 * time.Millisecond) }}
	cfg := genConfig(start, 0, 200*time.Millisecond)
	lat := NewHistogram()
	res, err := Generate(context.Background(), cfg, sink, lat, nil)
	sink.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Acked != res.Sent {
		t.Fatalf("sent %d acked %d", res.Sent, res.Acked)
	}
	if s := lat.Summary(); s.Count == 0 || s.MaxMs > 100 {
		t.Fatalf("closed-loop latencies should be ~2 ms: %+v", s)
	}
}

func TestGenerateStopAfter(t *testing.T) {
	sink := &fakeSink{}
	cfg := GenConfig{Schedule: Schedule{Start: time.Now()}, MeasureFrom: time.Now(), MeasureTo: time.Now().Add(time.Hour),
		StopAfter: 250, Drain: time.Second, MaxBatch: 100}
	res, err := Generate(context.Background(), cfg, sink, NewHistogram(), nil)
	sink.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 250 || res.Acked != 250 || sink.batches != 3 {
		t.Fatalf("sent %d acked %d in %d batches, want 250 in 3", res.Sent, res.Acked, sink.batches)
	}
}

func TestGenConfigValidate(t *testing.T) {
	if _, err := Generate(context.Background(), GenConfig{MaxBatch: 0, StopAfter: 1}, &fakeSink{}, NewHistogram(), nil); err == nil {
		t.Fatal("MaxBatch 0 accepted")
	}
	if _, err := Generate(context.Background(), GenConfig{MaxBatch: 1}, &fakeSink{}, NewHistogram(), nil); err == nil {
		t.Fatal("no StopAt nor StopAfter accepted")
	}
}
