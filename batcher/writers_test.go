package batcher_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// waitedEnv is a batcher whose linger never ends within a test (so that
// only size, a flush or sealWaited seal a file), with its metrics.
type waitedEnv struct {
	t     testing.TB
	b     *batcher.Batcher
	topic metadata.Topic
	reg   *prometheus.Registry
}

func newWaitedEnv(t *testing.T, sealWhenWaited bool) *waitedEnv {
	t.Helper()
	return newWaitedEnvAge(t, sealWhenWaited, time.Nanosecond)
}

// newWaitedEnvAge is newWaitedEnv with files sealed early only once they
// are minAge old.
func newWaitedEnvAge(t *testing.T, sealWhenWaited bool, minAge time.Duration) *waitedEnv {
	t.Helper()
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	tp, err := meta.CreateTopic(ctx, metadata.TopicSpec{Name: "w", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	cfg.MaxFileBytes = 64 << 10
	cfg.SealWhenWaited = sealWhenWaited
	batcher.SetWaitedMinAge(&cfg, minAge)
	reg := prometheus.NewRegistry()
	b, err := batcher.New(cfg, objectstore.NewMemory(), meta, batcher.Options{Metrics: batcher.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	e := &waitedEnv{t: t, b: b, topic: tp, reg: reg}
	// Recent ingest of more than a file per linger: files sealed for
	// size, then the open one flushed.
	var pend []*batcher.Pending
	for i := range 40 {
		p, err := b.Append(ctx, tp.ID, 0, batch(t, 200, fmt.Sprint("warm", i)))
		if err != nil {
			t.Fatal(err)
		}
		pend = append(pend, p)
	}
	b.Flush()
	for _, p := range pend {
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.seals("size"); n == 0 {
		t.Fatalf("warm-up sealed no file for size (%d bytes per batch)", len(batch(t, 200, "warm0")))
	}
	return e
}

func (e *waitedEnv) seals(reason string) int { return int(sealCount(e.t, e.reg, reason)) }

// appendAs appends one small batch as w's request (Begin, append,
// Appended) and returns its pending answer.
func (e *waitedEnv) appendAs(t *testing.T, w *batcher.Writer, tag string) *batcher.Pending {
	t.Helper()
	w.Begin()
	p, err := e.b.Append(batcher.WithWriter(context.Background(), w), e.topic.ID, 1, batch(t, 3, tag))
	if err != nil {
		t.Fatal(err)
	}
	w.Appended()
	return p
}

func waitOK(t *testing.T, p *batcher.Pending) metadata.BatchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("batch not committed (the file waited out its linger?): %v", err)
	}
	return res
}

// Two connections, one request in flight each: the file is sealed once
// the second one's batches are in, not before, and not at its linger.
func TestSealWhenEveryWriterWaits(t *testing.T) {
	e := newWaitedEnv(t, true)
	a, b := e.b.NewWriter(), e.b.NewWriter()
	defer a.Close()
	defer b.Close()
	b.Begin() // b's request is arriving: it may add to the file
	pa := e.appendAs(t, a, "a")
	if n := e.seals(batcher.SealWaited); n != 0 {
		t.Fatalf("sealed while b's request was still being appended (%d waited seals)", n)
	}
	p, err := e.b.Append(batcher.WithWriter(context.Background(), b), e.topic.ID, 1, batch(t, 3, "b"))
	if err != nil {
		t.Fatal(err)
	}
	b.Appended()
	if n := e.seals(batcher.SealWaited); n != 1 {
		t.Fatalf("%d waited seals once both writers waited, want 1", n)
	}
	ra, rb := waitOK(t, pa), waitOK(t, p)
	if rb.BaseOffset != ra.BaseOffset+3 {
		t.Fatalf("b's batch at %d, want right after a's (%d + 3)", rb.BaseOffset, ra.BaseOffset)
	}
	a.End()
	b.End()

	// A writer that pipelines: two requests in flight seen once, so one
	// in flight is no longer taken as waiting.
	c := e.b.NewWriter()
	defer c.Close()
	c.Begin()
	c.Begin()
	c.Appended()
	c.End()
	c.End()
	pc := e.appendAs(t, c, "c1")
	if n := e.seals(batcher.SealWaited); n != 1 {
		t.Fatalf("sealed with c at one of its two requests in flight (%d waited seals)", n)
	}
	pc2 := e.appendAs(t, c, "c2")
	if n := e.seals(batcher.SealWaited); n != 2 {
		t.Fatalf("%d waited seals once c had its two requests in, want 2", n)
	}
	waitOK(t, pc)
	waitOK(t, pc2)
	c.End()
	c.End()
}

// A file every writer waits on is sealed once it is the minimum age (by
// default two fifths of the linger), not before: a client with one request in
// flight then waits about one linger for a record, not two, and the files
// per linger at most double.
func TestSealWhenWaitedAtMinimumAge(t *testing.T) {
	const minAge = 300 * time.Millisecond
	e := newWaitedEnvAge(t, true, minAge)
	w := e.b.NewWriter()
	defer w.Close()
	start := time.Now()
	pw := e.appendAs(t, w, "k")
	if n := e.seals(batcher.SealWaited); n != 0 {
		t.Fatalf("sealed at once, before the minimum age (%d waited seals)", n)
	}
	waitOK(t, pw) // the linger is a minute: only the waited seal can answer it in time
	if took := time.Since(start); took < minAge {
		t.Fatalf("answered after %v, before the minimum age %v", took, minAge)
	}
	if n := e.seals(batcher.SealWaited); n != 1 {
		t.Fatalf("%d waited seals, want 1", n)
	}
	w.End()

	// A writer that stops waiting before the minimum age (its next
	// request arrives) leaves the file open when the age is reached.
	w2 := e.b.NewWriter()
	defer w2.Close()
	p1 := e.appendAs(t, w2, "a")
	w2.Begin() // a second request on its way: w2 no longer waits
	time.Sleep(minAge + 200*time.Millisecond)
	if n := e.seals(batcher.SealWaited); n != 1 {
		t.Fatalf("sealed at the minimum age with the writer still sending (%d waited seals, want 1)", n)
	}
	if _, err := e.b.Append(batcher.WithWriter(context.Background(), w2), e.topic.ID, 1, batch(t, 3, "b")); err != nil {
		t.Fatal(err)
	}
	w2.Appended() // now waiting on a file past the minimum age: sealed at once
	if n := e.seals(batcher.SealWaited); n != 2 {
		t.Fatalf("%d waited seals once the writer waited on a file past the minimum age, want 2", n)
	}
	waitOK(t, p1)
	w2.End()
	w2.End()
}

// A batch of no writer (a gRPC producer, whose requests the batcher does
// not see), a writer closed mid-request and the setting turned off all
// leave the file to its linger.
func TestSealWhenWaitedHoldsOff(t *testing.T) {
	t.Run("anonymous batch", func(t *testing.T) {
		e := newWaitedEnv(t, true)
		anon, err := e.b.Append(context.Background(), e.topic.ID, 1, batch(t, 3, "grpc"))
		if err != nil {
			t.Fatal(err)
		}
		w := e.b.NewWriter()
		defer w.Close()
		pw := e.appendAs(t, w, "k")
		if n := e.seals(batcher.SealWaited); n != 0 {
			t.Fatalf("a file holding a gRPC batch was sealed early (%d)", n)
		}
		e.b.Flush()
		waitOK(t, anon)
		waitOK(t, pw)
	})
	t.Run("closed writer", func(t *testing.T) {
		e := newWaitedEnv(t, true)
		a, gone := e.b.NewWriter(), e.b.NewWriter()
		defer a.Close()
		gone.Begin()
		gone.Close() // its connection dropped mid-request: it counts no more
		pa := e.appendAs(t, a, "a")
		if n := e.seals(batcher.SealWaited); n != 1 {
			t.Fatalf("%d waited seals with the only live writer waiting, want 1", n)
		}
		waitOK(t, pa)
		gone.Appended() // late calls on a closed writer change nothing
		gone.End()
		a.End()
	})
	t.Run("setting off", func(t *testing.T) {
		e := newWaitedEnv(t, false)
		w := e.b.NewWriter()
		defer w.Close()
		pw := e.appendAs(t, w, "k")
		if n := e.seals(batcher.SealWaited); n != 0 {
			t.Fatalf("sealed early with SealWhenWaited off (%d)", n)
		}
		e.b.Flush()
		waitOK(t, pw)
	})
	t.Run("nil writer", func(t *testing.T) {
		var w *batcher.Writer
		w.Begin()
		w.Appended()
		w.End()
		w.Close()
		if ctx := batcher.WithWriter(context.Background(), nil); ctx != context.Background() {
			t.Fatal("WithWriter(nil) changed the context")
		}
	})
}
