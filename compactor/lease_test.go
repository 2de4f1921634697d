package compactor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/objectstore"
)

// jobTracker records which owners are inside each job at once.
type jobTracker struct {
	mu      sync.Mutex // protects inside, maxSeen, runs
	inside  map[string]int
	maxSeen map[string]int
	runs    map[string]int // by owner, and by "owner/job"
	refused map[string]int // lease attempts refused, by owner
}

func (j *jobTracker) enter(job, owner string) func() {
	j.mu.Lock()
	j.inside[job]++
	j.maxSeen[job] = max(j.maxSeen[job], j.inside[job])
	j.runs[owner]++
	j.runs[owner+"/"+job]++ // and by owner and job
	j.mu.Unlock()
	time.Sleep(15 * time.Millisecond) // widen the window
	return func() {
		j.mu.Lock()
		j.inside[job]--
		j.mu.Unlock()
	}
}

// tracked is one compactor's view of the store: the first call of each job
// is tracked.
type tracked struct {
	metadata.Store
	owner string
	j     *jobTracker
}

func (t tracked) AcquireLease(ctx context.Context, job, owner string, ttl time.Duration) (bool, error) {
	ok, err := t.Store.AcquireLease(ctx, job, owner, ttl)
	if err == nil && !ok {
		t.j.mu.Lock()
		t.j.refused[owner]++
		t.j.mu.Unlock()
	}
	return ok, err
}

// waitJobs waits until cond holds of j (under its lock), 30 s at most.
func (j *jobTracker) waitJobs(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		j.mu.Lock()
		ok := cond()
		j.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s (runs %v, refused %v)", what, j.runs, j.refused)
		}
	}
}

func (t tracked) ListTopics(ctx context.Context) ([]metadata.Topic, error) {
	defer t.j.enter(compactor.JobRetention, t.owner)()
	return t.Store.ListTopics(ctx)
}

func (t tracked) MergeCandidates(ctx context.Context, maxSize int64, minAge time.Duration, maxFiles int) ([]metadata.MergeBatch, error) {
	defer t.j.enter(compactor.JobMerge, t.owner)()
	return t.Store.MergeCandidates(ctx, maxSize, minAge, maxFiles)
}

func (t tracked) CompactionSection(ctx context.Context, topicID int64, partition int32, minLag time.Duration, maxBytes int64) (metadata.CompactSection, error) {
	defer t.j.enter(compactor.JobCompact, t.owner)()
	return t.Store.CompactionSection(ctx, topicID, partition, minLag, maxBytes)
}

func (t tracked) DeletableFiles(ctx context.Context, grace time.Duration, limit int) ([]metadata.DeadFile, error) {
	defer t.j.enter(compactor.JobDeletion, t.owner)()
	return t.Store.DeletableFiles(ctx, grace, limit)
}

func (t tracked) UnknownKeys(ctx context.Context, keys []string) ([]string, error) {
	defer t.j.enter(compactor.JobOrphans, t.owner)()
	return t.Store.UnknownKeys(ctx, keys)
}

// Two compactors on one PostgreSQL: each job runs in one of them at a
// time; when the holder stops, the other takes over.
func TestLeaseOneJobAtATime(t *testing.T) {
	e := pgEnv(t)
	// A compacted topic, so that the keyed compaction job has a partition
	// to look at.
	kt, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: "keyed", Partitions: 1,
		Config: map[string]string{"cleanup.policy": "compact"}})
	if err != nil {
		t.Fatal(err)
	}
	writeKeyed(t, e, kt.ID, 0, []kv{"a=1"})
	j := &jobTracker{inside: map[string]int{}, maxSeen: map[string]int{}, runs: map[string]int{}, refused: map[string]int{}}
	mk := func(owner string) *compactor.Compactor {
		return newCompactor(t, env{meta: tracked{e.meta, owner, j}, store: e.store}, owner, func(c *compactor.Config) {
			c.Interval, c.LeaseTTL, c.OrphanShards = 5*time.Millisecond, 2*time.Second, 1
		})
	}
	a, b := mk("a"), mk("b")
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	aDone := make(chan struct{})
	go func() { defer wg.Done(); defer close(aDone); _ = a.Run(ctxA) }()
	// a takes the leases first: b starts once a went through every job
	// (retention, compact, merge, deletion, orphans) once.
	ranAll := func(owner string) func() bool {
		return func() bool {
			for _, job := range compactor.Jobs {
				if j.runs[owner+"/"+job] == 0 {
					return false
				}
			}
			return true
		}
	}
	j.waitJobs(t, "a runs every job", ranAll("a"))
	go func() { defer wg.Done(); _ = b.Run(ctxB) }()
	// b tries for the leases, passes after passes, and is refused each
	// job (a renews them well inside their 2 s).
	j.waitJobs(t, "b is refused the leases", func() bool { return j.refused["b"] >= 3*len(compactor.Jobs) })
	j.mu.Lock()
	bBefore := j.runs["b"]
	j.mu.Unlock()
	stopA() // releases its leases: b takes over at once, not after their TTL
	<-aDone
	j.mu.Lock()
	refusedAtStop := j.refused["b"]
	j.mu.Unlock()
	j.waitJobs(t, "b runs every job once a stopped", ranAll("b"))
	stopB()
	wg.Wait()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, job := range compactor.Jobs {
		if j.maxSeen[job] != 1 {
			t.Errorf("job %s: %d compactors inside at once, want 1", job, j.maxSeen[job])
		}
	}
	// At most the one attempt in flight when a released its leases is refused after.
	if late := j.refused["b"] - refusedAtStop; late > 1 {
		t.Errorf("b was refused %d leases after a stopped: a did not release them", late)
	}
	if j.runs["a"] == 0 || bBefore != 0 || j.runs["b"] == 0 {
		t.Errorf("job runs: a %d, b %d while a held the leases, b %d in all; want a > 0, then b only after a stopped",
			j.runs["a"], bBefore, j.runs["b"])
	}
}

// Failed object deletes are retried; the rows stay until the store
// confirmed; a metadata failure after the deletes is retried too (the
// object is then missing, which counts as confirmed).
func TestDeleteFailuresRetried(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "f", Partitions: 1})
		var keys []string
		for range 6 {
			keys = append(keys, write(t, e, batch(tp.ID, 0, 1)))
		}
		faulty := objectstore.WithFaults(e.store, objectstore.FaultConfig{})
		mf := metafault.Wrap(e.meta)
		left := new(atomic.Int64)
		left.Store(1)
		c := newCompactor(t, env{meta: forgetFails{Store: mf, left: left}, store: faulty}, "a", func(c *compactor.Config) { c.Grace = 0 })
		if _, err := e.meta.DeleteRecords(ctx, tp.ID, 0, 6); err != nil {
			t.Fatal(err)
		}
		// The metadata is down for a whole pass: nothing happens.
		mf.Always(metafault.OpRetention, metafault.Fault{Mode: metafault.Refused})
		if _, err := c.RunOnce(ctx); !errors.Is(err, metadata.ErrNotApplied) {
			t.Fatalf("RunOnce with the metadata refusing = %v", err)
		}
		mf.Reset()
		if n := len(objects(t, e.store)); n != 6 {
			t.Fatalf("%d objects after a failed pass, want 6", n)
		}
		faulty.Next(objectstore.OpDelete, 4, objectstore.FaultError)
		r, err := c.RunOnce(ctx)
		if err == nil || r.DeleteFailures != 4 || r.FilesDeleted != 0 {
			t.Fatalf("pass with 4 failing deletes and a failing forget: %+v, %v", r, err)
		}
		if n := len(objects(t, e.store)); n != 4 {
			t.Errorf("%d objects left, want the 4 whose delete failed", n)
		}
		if dead, _ := e.meta.DeletableFiles(ctx, 0, 100); len(dead) != 6 {
			t.Errorf("%d files still marked, want 6 (none forgotten: the forget failed)", len(dead))
		}
		r = runOnce(t, c)
		if r.FilesDeleted != 6 || r.DeleteFailures != 0 {
			t.Errorf("retry pass: %+v, want all 6 deleted and forgotten", r)
		}
		if n := len(objects(t, e.store)); n != 0 {
			t.Errorf("%d objects left after the retry", n)
		}
		if q, _ := e.meta.DeletionQueue(ctx); q.Files != 0 {
			t.Errorf("deletion queue %+v after the retry", q)
		}
	})
}

// forgetFails fails ForgetFiles while left > 0, counting down.
type forgetFails struct {
	metadata.Store
	left *atomic.Int64
}

func (f forgetFails) ForgetFiles(ctx context.Context, ids []int64) (int, error) {
	if f.left.Add(-1) >= 0 {
		return 0, errors.New("injected: forget files failed")
	}
	return f.Store.ForgetFiles(ctx, ids)
}
