package metadatatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testConcurrentCommits has 8 committers write 50 files each, every file
// touching a random subset of 20 partitions in random order (some
// partitions twice; half the committers send some idempotent batches). No commit may deadlock or
// fail, and every partition's offsets must come out dense and unique.
func testConcurrentCommits(t *testing.T, s metadata.Store) {
	const (
		committers = 8
		files      = 50
		partitions = 20
	)
	tp := createTopic(t, s, "contended", partitions)
	c, cancel := context.WithTimeout(ctx(t), 45*time.Second)
	defer cancel()

	type placed struct {
		key string
		b   metadata.BatchCommit
		r   metadata.BatchResult
	}
	var (
		mu        sync.Mutex
		placedAll []placed
		wg        sync.WaitGroup
		errs      = make(chan error, committers)
	)
	for g := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			pid, epoch, err := s.InitProducer(c)
			if err != nil {
				errs <- fmt.Errorf("committer %d: InitProducer: %w", g, err)
				return
			}
			seq := map[int32]int32{}
			for i := range files {
				var batches []metadata.BatchCommit
				for _, p := range rng.Perm(partitions)[:1+rng.IntN(partitions)] {
					for range 1 + rng.IntN(2) {
						n := int32(1 + rng.IntN(5))
						b := plain(tp.ID, int32(p), n)
						if g%2 == 1 && p%2 == 0 { // half the committers use idempotent producers
							b = idem(tp.ID, int32(p), pid, epoch, seq[int32(p)], n)
							seq[int32(p)] += n
						}
						batches = append(batches, b)
					}
				}
				f := file(fmt.Sprintf("concurrent/%d/%d", g, i), batches...)
				res, err := s.CommitFile(c, f)
				if err != nil {
					errs <- fmt.Errorf("committer %d file %d: %w", g, i, err)
					return
				}
				mu.Lock()
				for j, r := range res {
					placedAll = append(placedAll, placed{f.Key, f.Batches[j], r})
				}
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(50 * time.Second):
		t.Fatal("concurrent commits did not finish within 50s: deadlock?")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	refs := map[int32]map[int64]metadata.BatchRef{}
	var total int64
	for p := range int32(partitions) {
		refs[p] = map[int64]metadata.BatchRef{}
		for _, r := range allBatches(t, s, tp.ID, p) {
			refs[p][r.BaseOffset] = r
			total += int64(r.RecordCount)
		}
	}
	var committed int64
	for _, pl := range placedAll {
		if pl.r.Err != nil || pl.r.Duplicate {
			t.Errorf("file %s partition %d: %+v, want accepted", pl.key, pl.b.Partition, pl.r)
			continue
		}
		committed += int64(pl.b.RecordCount)
		got, ok := refs[pl.b.Partition][pl.r.BaseOffset]
		if !ok || got.FileKey != pl.key || got.ByteOffset != pl.b.ByteOffset || got.RecordCount != pl.b.RecordCount {
			t.Errorf("file %s partition %d offset %d reads back as %+v", pl.key, pl.b.Partition, pl.r.BaseOffset, got)
		}
	}
	if total != committed {
		t.Errorf("log holds %d records, committers committed %d", total, committed)
	}
}

// testCancelledCommit cancels large commits at various points: each file
// must be committed whole or not at all, and the store must stay usable.
func testCancelledCommit(t *testing.T, s metadata.Store) {
	const partitions = 50
	tp := createTopic(t, s, "cancel", partitions)
	pid := producers(t, s, 500) // each round gives each a new epoch
	var keys []string
	for round, delay := range []time.Duration{0, 50 * time.Microsecond, 200 * time.Microsecond, time.Millisecond,
		2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
		50 * time.Millisecond, 2 * time.Second} {
		var batches []metadata.BatchCommit
		for i := range 1500 {
			p := int32(i % partitions)
			if i%3 == 0 {
				// A new epoch of a producer each: accepted, and its state written.
				batches = append(batches, idem(tp.ID, p, pid+int64(i/3), int16(round), 0, 1))
			} else {
				batches = append(batches, plain(tp.ID, p, 2))
			}
		}
		f := file(key(), batches...)
		keys = append(keys, f.Key)
		c, cancel := context.WithCancel(ctx(t))
		var timer *time.Timer
		if delay == 0 {
			cancel()
		} else {
			timer = time.AfterFunc(delay, cancel)
		}
		_, err := s.CommitFile(c, f)
		if timer != nil {
			timer.Stop()
		}
		cancel()
		t.Logf("cancel after %v: %v", delay, err)
	}
	// A commit on every partition waits for anything still in flight, and
	// shows the store still works.
	var batches []metadata.BatchCommit
	for p := range int32(partitions) {
		batches = append(batches, plain(tp.ID, p, 1))
	}
	for _, r := range commit(t, s, file(key(), batches...)) {
		if r.Err != nil {
			t.Fatalf("commit after cancellations: %+v", r)
		}
	}
	perKey := map[string]int{}
	for p := range int32(partitions) {
		for _, r := range allBatches(t, s, tp.ID, p) {
			perKey[r.FileKey]++
		}
	}
	whole := 0
	for _, k := range keys {
		switch perKey[k] {
		case 0:
		case 1500:
			whole++
		default:
			t.Errorf("file %s is partly committed: %d of 1500 batches", k, perKey[k])
		}
	}
	t.Logf("%d of %d cancelled files committed whole, the rest not at all", whole, len(keys))
	if whole == 0 {
		t.Error("not even the file cancelled after 2s was committed")
	}
}

// testConcurrentSamePartitions has 12 committers write files that each
// name the same 8 partitions (some twice) in a random order, without
// idempotent batches: the partition locks must be taken in one order
// whatever the order in the file and the plan, so no commit deadlocks,
// and every partition's offsets come out dense.
func testConcurrentSamePartitions(t *testing.T, s metadata.Store) {
	const (
		committers = 12
		files      = 25
		partitions = 8
	)
	tp := createTopic(t, s, "same-partitions", partitions)
	var (
		mu   sync.Mutex
		want = map[int32]int64{}
	)
	concurrently(t, committers, "commits naming the same partitions", func(c context.Context, g int) error {
		rng := rand.New(rand.NewPCG(uint64(g), 7))
		for i := range files {
			var batches []metadata.BatchCommit
			for _, p := range rng.Perm(partitions) {
				batches = append(batches, plain(tp.ID, int32(p), int32(1+rng.IntN(3))))
				if rng.IntN(4) == 0 {
					batches = append(batches, plain(tp.ID, int32(p), 1))
				}
			}
			f := file(fmt.Sprintf("same/%d/%d", g, i), batches...)
			res, err := s.CommitFile(c, f)
			if err != nil {
				return fmt.Errorf("committer %d file %d: %w", g, i, err)
			}
			mu.Lock()
			for j, r := range res {
				if r.Err != nil {
					mu.Unlock()
					return fmt.Errorf("committer %d file %d batch %d: %w", g, i, j, r.Err)
				}
				want[f.Batches[j].Partition] += int64(f.Batches[j].RecordCount)
			}
			mu.Unlock()
		}
		return nil
	})
	denseTo(t, s, tp.ID, partitions, want)
}

// ConcurrentSamePartitions runs the ConcurrentSamePartitions conformance
// test on s alone, for backends that repeat it under other settings (such
// as planner settings that change every plan).
func ConcurrentSamePartitions(t *testing.T, s metadata.Store) { testConcurrentSamePartitions(t, s) }

// concurrently runs fn for committers 0..n-1 at once, each with a context
// of 45 s, and fails the test with each one's error, or when they have not
// all finished within 50 s (a deadlock).
func concurrently(t *testing.T, n int, what string, fn func(c context.Context, g int) error) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx(t), 45*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(c, g); err != nil {
				errs <- err
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(50 * time.Second):
		t.Fatalf("%s did not finish within 50s: deadlock?", what)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// denseTo checks that each of the topic's partitions is dense up to its
// high watermark, want[p].
func denseTo(t *testing.T, s metadata.Store, topic int64, partitions int32, want map[int32]int64) {
	t.Helper()
	for p := range partitions {
		allBatches(t, s, topic, p)
		if got := hw(t, s, topic, p); got != want[p] {
			t.Errorf("partition %d high watermark %d, want %d", p, got, want[p])
		}
	}
}
