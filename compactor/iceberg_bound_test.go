package compactor_test

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/compactor"
)

// TestIcebergPassBound: a pass reads at most IcebergMaxBytes of a table's
// batches whatever its partition count (32 partitions, batches of about
// 500 bytes, a 4 KiB bound: each partition taking one batch read 16 KiB),
// and passes after passes append every record, once. A pass the bound
// cut reports its table behind (what Run catches up on between passes);
// the pass that finds nothing left does not.
func TestIcebergPassBound(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		const bound = 4096
		rnd := mrand.New(mrand.NewPCG(41, 42))
		tp, want := producedTopic(t, e.env, "wide", 32, map[string]string{"iceberg.lag": "0"}, 2, 4, rnd)
		rc := &readCounter{Store: e.store}
		w, _ := e.writer(t)
		c := iceCompactor(t, iceEnv{env: env{meta: e.meta, store: rc}, cfg: e.cfg}, "bound", w, func(c *compactor.Config) {
			c.IcebergMaxBytes = bound
			c.MergeSmallBytes, c.CompactMaxBytes = 0, 0
		})
		rows := 0
		for pass := 0; pass < 200; pass++ {
			r := runOnce(t, c)
			read, _, _ := rc.take()
			if read > bound {
				t.Fatalf("pass %d read %d bytes of batches, over the %d bound", pass, read, bound)
			}
			rows += r.IcebergRows
			if pass == 0 && r.IcebergBehind != 1 {
				t.Fatalf("the first pass, cut by the bound, reports %d tables behind, want 1", r.IcebergBehind)
			}
			if r.IcebergRows == 0 {
				if r.IcebergBehind != 0 {
					t.Fatalf("a pass that appended nothing reports %d tables behind", r.IcebergBehind)
				}
				break
			}
		}
		n := 0
		for _, p := range want {
			n += len(p)
		}
		if rows != n {
			t.Fatalf("passes appended %d rows, want %d", rows, n)
		}
		checkTable(t, w, tp.Name, want)
	})
}

// TestIcebergCatchesUpBetweenPasses: a compactor whose passes are an hour
// apart, with a bound far below the log, still appends the whole log to
// the table at once: Run makes the behind table's next appends without
// waiting for the next pass, each within the bound.
func TestIcebergCatchesUpBetweenPasses(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		const bound = 4096
		rnd := mrand.New(mrand.NewPCG(43, 44))
		tp, want := producedTopic(t, e.env, "behind", 8, map[string]string{"iceberg.lag": "0"}, 6, 4, rnd)
		n := int64(0)
		for _, p := range want {
			n += int64(len(p))
		}
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "behind", w, func(c *compactor.Config) {
			c.IcebergMaxBytes = bound
			c.Interval = time.Hour
			c.MergeSmallBytes, c.CompactMaxBytes = 0, 0
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		deadline := time.Now().Add(time.Minute)
		for {
			wm, err := w.Watermark(ctx, tp.Name)
			if err != nil {
				cancel()
				<-done
				t.Fatal(err)
			}
			var got int64
			for _, next := range wm {
				got += next
			}
			if got == n {
				break
			}
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("the table's watermark covers %d of %d records a minute after the first pass: Run waited for the next pass", got, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		checkTable(t, w, tp.Name, want)
	})
}

// TestIcebergCatchUpRefused: a catalog that refuses every commit does not
// turn the catch-up into a busy loop: the failed append leaves no table
// behind, and Run waits for its next pass (an hour away) instead of
// trying again at once.
func TestIcebergCatchUpRefused(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		rnd := mrand.New(mrand.NewPCG(45, 46))
		producedTopic(t, e.env, "refused", 8, map[string]string{"iceberg.lag": "0"}, 6, 4, rnd)
		w, fc := e.writer(t)
		var tried atomic.Int64
		fc.BeforeCommit(func(context.Context, table.Identifier) error { tried.Add(1); return errors.New("refused") })
		c := iceCompactor(t, e, "refused", w, func(c *compactor.Config) {
			c.IcebergMaxBytes = 4096
			c.Interval = time.Hour
			c.MergeSmallBytes, c.CompactMaxBytes = 0, 0
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		time.Sleep(time.Second)
		first := tried.Load()
		time.Sleep(time.Second)
		second := tried.Load()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			t.Fatal("no commit was tried: the test shows nothing")
		}
		if second != first {
			t.Fatalf("%d commits tried in the first second, %d after the next: Run retries a refused append at once", first, second)
		}
	})
}
