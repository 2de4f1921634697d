package compactor_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.VerifyNoLeaks()) }

// env is a metadata store and the object store its files are in.
type env struct {
	meta  metadata.Store
	store objectstore.Store
}

// backends runs fn on PostgreSQL with the S3 server, and on SQLite with a
// local directory.
func backends(t *testing.T, fn func(t *testing.T, e env)) {
	t.Run("postgres+s3", func(t *testing.T) { fn(t, pgEnv(t)) })
	t.Run("sqlite+dir", func(t *testing.T) {
		meta, err := sqlite.Open(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { meta.Close() })
		dir, err := objectstore.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, env{meta: meta, store: dir})
	})
}

func pgEnv(t testing.TB) env {
	ctx := context.Background()
	meta, err := postgres.Open(ctx, testenv.Postgres(t), postgres.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	sc := testenv.S3(t)
	c := s3store.DefaultConfig()
	c.Bucket, c.Endpoint, c.Region, c.AccessKey, c.SecretKey, c.PathStyle = sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, true
	s3, err := s3store.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Close() })
	return env{meta: meta, store: s3}
}

// newKey is a batcher-like key: v1/files/XX/<random>.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("v1/files/%02x/%s", b[15], hex.EncodeToString(b[:]))
}

// batch is count records of 100 bytes each of a partition.
func batch(topic int64, partition, count int32) metadata.BatchCommit {
	return metadata.BatchCommit{TopicID: topic, Partition: partition, RecordCount: count, ByteLength: 100 * int64(count),
		MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: metadata.NoSequence}
}

// put uploads a file of the batches and returns its commit (not committed).
func put(t testing.TB, e env, batches ...metadata.BatchCommit) metadata.FileCommit {
	t.Helper()
	f := metadata.FileCommit{Key: newKey()}
	var off int64
	for _, b := range batches {
		b.ByteOffset = off
		off += b.ByteLength
		f.Batches = append(f.Batches, b)
	}
	f.Size = off
	if err := e.store.Put(context.Background(), f.Key, make([]byte, f.Size), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// write uploads and commits a file of the batches.
func write(t testing.TB, e env, batches ...metadata.BatchCommit) string {
	t.Helper()
	f := put(t, e, batches...)
	res, err := e.meta.CommitFile(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("commit %s: %v", f.Key, r.Err)
		}
	}
	return f.Key
}

func newCompactor(t testing.TB, e env, owner string, mut func(*compactor.Config)) *compactor.Compactor {
	t.Helper()
	cfg := compactor.DefaultConfig()
	cfg.Owner = owner
	cfg.Interval = 20 * time.Millisecond
	cfg.Grace = 300 * time.Millisecond
	cfg.OrphanAge = 3 * time.Second
	if mut != nil {
		mut(&cfg)
	}
	c, err := compactor.New(e.meta, e.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runOnce(t testing.TB, c *compactor.Compactor) compactor.Report {
	t.Helper()
	r, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return r
}

// objects lists every key under v1/files/.
func objects(t testing.TB, s objectstore.Store) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	if err := s.List(context.Background(), "v1/files/", func(o objectstore.ObjectInfo) error {
		keys[o.Key] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// Size retention moves the cursor; the dead files are deleted from the
// object store after the grace period only, then from the metadata; files
// still referenced stay. Storage figures follow.
func TestRetentionDeletesDeadFiles(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "r", Partitions: 2})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for range 10 {
			keys = append(keys, write(t, e, batch(tp.ID, 0, 1))) // partition 0: offsets 0..9, 100 bytes each
		}
		shared := write(t, e, batch(tp.ID, 0, 1), batch(tp.ID, 1, 1)) // partition 0 offset 10
		before, _ := e.meta.TopicStorage(ctx, tp.ID)
		reg := prometheus.NewRegistry()
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.Registerer = reg })
		if r := runOnce(t, c); r.Advanced != 0 || r.FilesMarked != 0 {
			t.Fatalf("pass with default retention did %+v", r)
		}
		if _, err := e.meta.AlterTopicConfig(ctx, "r", map[string]string{metadata.ConfigRetentionBytes: "300"}, nil); err != nil {
			t.Fatal(err)
		}
		r := runOnce(t, c)
		marked := storeNow(t, e) // the files were marked dead by this
		if r.Advanced != 1 || r.Batches != 8 || r.FilesMarked != 8 || r.FilesDeleted != 0 {
			t.Fatalf("first pass after retention.bytes=300: %+v; want partition 0 moved to 8, 8 batches collected, 8 files marked", r)
		}
		if off, _ := e.meta.ListOffset(ctx, tp.ID, 0, metadata.OffsetEarliest, 0); off != 8 {
			t.Errorf("partition 0 log start %d, want 8 (offsets 8, 9, 10 = 300 bytes kept)", off)
		}
		have := objects(t, e.store)
		for _, k := range keys {
			if !have[k] {
				t.Fatalf("%s deleted before the grace period", k)
			}
		}
		if v := testutil.ToFloat64(mustGauge(t, reg, "floe_compactor_deletion_queue_files")); v != 8 {
			t.Errorf("deletion queue gauge %v, want 8", v)
		}
		waitStore(t, e, marked.Add(300*time.Millisecond)) // newCompactor's grace period
		r = runOnce(t, c)
		if r.FilesDeleted != 8 || r.DeleteFailures != 0 {
			t.Fatalf("pass after the grace period: %+v, want 8 files deleted", r)
		}
		have = objects(t, e.store)
		for i, k := range keys {
			if have[k] != (i >= 8) {
				t.Errorf("file %d (%s) exists: %v", i, k, have[k])
			}
		}
		if !have[shared] {
			t.Error("a referenced file was deleted")
		}
		after, _ := e.meta.TopicStorage(ctx, tp.ID)
		if before.Files != 11 || after.Files != 3 || after.LiveBytes != 400 || after.DeadBytes != 0 {
			t.Errorf("storage before %+v, after %+v", before, after)
		}
		t.Logf("storage before retention: %d files, %d bytes; after: %d files, %d bytes", before.Files, before.FileBytes, after.Files, after.FileBytes)
		if v := testutil.ToFloat64(mustGauge(t, reg, "floe_compactor_deletion_queue_files")); v != 0 {
			t.Errorf("deletion queue gauge %v after deletion, want 0", v)
		}
	})
}

func mustGauge(t testing.TB, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("metric %s not registered", name)
	return nil
}

// A topic whose cleanup.policy is compact alone is not trimmed by time or
// size (only compacted by key: see keyed_test.go).
func TestCompactOnlyTopicKept(t *testing.T) {
	e := env{meta: mustSQLite(t), store: objectstore.NewMemory()}
	ctx := context.Background()
	tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "c", Partitions: 1,
		Config: map[string]string{"cleanup.policy": "compact", metadata.ConfigRetentionBytes: "0", metadata.ConfigRetentionMs: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, e, batch(tp.ID, 0, 2))
	c := newCompactor(t, e, "a", func(c *compactor.Config) { c.Grace = 0 })
	if r := runOnce(t, c); r.Advanced != 0 || r.FilesDeleted != 0 {
		t.Fatalf("pass on a compact-only topic: %+v", r)
	}
	if _, err := e.meta.AlterTopicConfig(ctx, "c", map[string]string{"cleanup.policy": "compact,delete"}, nil); err != nil {
		t.Fatal(err)
	}
	if r := runOnce(t, c); r.Advanced != 1 || r.FilesDeleted != 1 {
		t.Fatalf("pass once deletion applies: %+v", r)
	}
}

func mustSQLite(t testing.TB) metadata.Store {
	meta, err := sqlite.Open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	return meta
}

// Time retention: batches older than retention.ms die, younger stay.
func TestTimeRetention(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1,
			Config: map[string]string{metadata.ConfigRetentionMs: "700"}})
		if err != nil {
			t.Fatal(err)
		}
		const retention = 700 * time.Millisecond
		old := write(t, e, batch(tp.ID, 0, 3))
		waitStore(t, e, storeNow(t, e).Add(retention)) // the old batch is past retention.ms
		youngAt := storeNow(t, e)
		young := write(t, e, batch(tp.ID, 0, 3))
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.Grace = 0 })
		r := runOnce(t, c) // grace 0: marked and deleted in one pass
		r2 := runOnce(t, c)
		// The young batch is young while the store's clock says so, measured
		// after both passes (a loaded machine may take longer than 0.7 s).
		if storeNow(t, e).Sub(youngAt) >= retention {
			t.Logf("the passes ended %v after the young batch: past retention.ms, so only the old file's fate is checked", storeNow(t, e).Sub(youngAt))
			if have := objects(t, e.store); have[old] {
				t.Errorf("the old file exists after two passes")
			}
			return
		}
		if r.Advanced != 1 || r.FilesMarked != 1 || r.FilesDeleted != 1 {
			t.Fatalf("pass: %+v, want the old file marked and deleted", r)
		}
		if r2.Advanced != 0 || r2.FilesMarked != 0 || r2.FilesDeleted != 0 {
			t.Fatalf("second pass: %+v, want nothing to do", r2)
		}
		have := objects(t, e.store)
		if have[old] || !have[young] {
			t.Errorf("old file exists %v, young file exists %v", have[old], have[young])
		}
		if off, _ := e.meta.ListOffset(ctx, tp.ID, 0, metadata.OffsetEarliest, 0); off != 3 {
			t.Errorf("log start %d, want 3", off)
		}
	})
}

// A deleted topic's files die in bounded steps; other topics' files stay.
func TestDeletedTopicFilesDie(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		gone, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "gone", Partitions: 4})
		kept, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "kept", Partitions: 1})
		for i := range 20 {
			write(t, e, batch(gone.ID, int32(i%4), 2), batch(gone.ID, int32((i+1)%4), 1))
		}
		keep := write(t, e, batch(kept.ID, 0, 1))
		if err := e.meta.DeleteTopic(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.Grace, c.BatchLimit, c.MaxSteps = 0, 7, 3 })
		var total compactor.Report
		for range 10 {
			r := runOnce(t, c)
			if r.Batches > 21 {
				t.Fatalf("a pass collected %d batches, more than MaxSteps x BatchLimit", r.Batches)
			}
			total.Batches += r.Batches
			total.FilesDeleted += r.FilesDeleted
		}
		if total.Batches != 40 || total.FilesDeleted != 20 {
			t.Errorf("collected %d batches and deleted %d files, want 40 and 20", total.Batches, total.FilesDeleted)
		}
		if have := objects(t, e.store); len(have) != 1 || !have[keep] {
			t.Errorf("objects left: %v, want only %s", have, keep)
		}
	})
}

// Crashes between PUT and commit at random points leave orphans that are
// all collected once old enough, never before; every object the metadata
// references stays.
func TestOrphansCollected(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tp, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "o", Partitions: 3})
		rng := mrand.New(mrand.NewPCG(1, 2))
		faulty := objectstore.WithFaults(e.store, objectstore.FaultConfig{})
		fe := env{meta: e.meta, store: faulty}
		orphans, committed := map[string]bool{}, map[string]bool{}
		for i := range 60 {
			b := batch(tp.ID, int32(i%3), 1)
			switch rng.IntN(4) {
			case 0: // crash after the PUT, before the commit
				orphans[put(t, fe, b).Key] = true
			case 1: // the PUT landed but its answer was lost: the batcher gives up on the file
				faulty.Next(objectstore.OpPut, 1, objectstore.FaultLostResponse)
				f := metadata.FileCommit{Key: newKey(), Size: 100, Batches: []metadata.BatchCommit{b}}
				if err := faulty.Put(ctx, f.Key, make([]byte, 100), objectstore.PutOptions{}); err == nil {
					t.Fatal("lost-response put succeeded")
				}
				orphans[f.Key] = true
			case 2: // the commit failed for good (every batch refused): known, no batch
				f := put(t, fe, metadata.BatchCommit{TopicID: 1 << 40, Partition: 0, RecordCount: 1, ByteLength: 100,
					ProducerID: -1, BaseSequence: metadata.NoSequence})
				if _, err := e.meta.CommitFile(ctx, f); err != nil {
					t.Fatal(err)
				}
				orphans[f.Key] = true // swept as an empty file, deleted after the grace period
			default:
				committed[write(t, fe, b)] = true
			}
		}
		c := newCompactor(t, e, "a", func(c *compactor.Config) { c.OrphanPage, c.OrphanShards = 7, 256 })
		r := runOnce(t, c)
		if r.OrphansDeleted != 0 || r.FilesDeleted != 0 {
			t.Fatalf("first pass deleted %+v before the age limit", r)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			have := objects(t, e.store)
			for k := range committed {
				if !have[k] {
					t.Fatalf("referenced object %s deleted", k)
				}
			}
			left := 0
			for k := range orphans {
				if have[k] {
					left++
				}
			}
			if left == 0 && len(have) == len(committed) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d orphans left after 15 s", left, len(orphans))
			}
			runOnce(t, c)
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%d orphans collected, %d referenced objects kept", len(orphans), len(committed))
	})
}

// Readers fetching while retention moves the cursors, small files are
// merged and files are deleted never meet a missing object for a batch the
// metadata gave them, within the grace period of asking: a file the
// metadata gave is dead only after it was asked, and deleted a grace
// period after that. A read later than half the grace period, on a
// loaded machine, may meet it deleted: counted, not a failure (the
// grace runs from the marking transaction's now(), its start, which
// can precede the reader's snapshot by as long as that transaction
// takes; half the period leaves it 100 ms).
func TestReadersDuringDeletion(t *testing.T) {
	const grace = 200 * time.Millisecond
	backends(t, func(t *testing.T, e env) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		tp, _ := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "rd", Partitions: 2,
			Config: map[string]string{metadata.ConfigRetentionBytes: "2000"}})
		c := newCompactor(t, e, "a", func(c *compactor.Config) {
			c.Grace, c.MergeMinAge, c.MergeMaxFiles = grace, 100*time.Millisecond, 10
		})
		var (
			wg                sync.WaitGroup
			reads, missing    atomic.Int64
			late              atomic.Int64 // missing, but read past half the grace period
			outOfRange, files atomic.Int64
			merged, deleted   atomic.Int64
		)
		stop := make(chan struct{})
		wg.Add(1)
		go func() { // writer
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f, err := tryPutReal(e, "w", row{tp.ID, int32(i % 2), []int{2}}, row{tp.ID, int32((i + 1) % 2), []int{1}})
				if err != nil {
					t.Errorf("put: %v", err)
					return
				}
				if _, err := e.meta.CommitFile(ctx, f); err != nil && ctx.Err() == nil {
					t.Errorf("commit: %v", err)
					return
				}
				files.Add(1)
			}
		}()
		wg.Add(1)
		go func() { // compactor, and an occasional delete-records
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(30 * time.Millisecond):
				}
				if i%10 == 5 {
					hw, _ := e.meta.ListOffset(ctx, tp.ID, 1, metadata.OffsetLatest, 0)
					_, _ = e.meta.DeleteRecords(ctx, tp.ID, 1, hw-3)
				}
				r, err := c.RunOnce(ctx)
				if err != nil && ctx.Err() == nil {
					t.Errorf("RunOnce: %v", err)
				}
				merged.Add(int64(r.FilesMerged))
				deleted.Add(int64(r.FilesDeleted))
			}
		}()
		for r := range 4 {
			wg.Add(1)
			go func() { // reader from the earliest offset
				defer wg.Done()
				part := int32(r % 2)
				for {
					select {
					case <-stop:
						return
					default:
					}
					off, err := e.meta.ListOffset(ctx, tp.ID, part, metadata.OffsetEarliest, 0)
					if err != nil {
						continue
					}
					asked := time.Now()
					refs, _, err := e.meta.FindBatches(ctx, tp.ID, part, off, 1<<20)
					var oor *metadata.OffsetOutOfRangeError
					if errors.As(err, &oor) {
						outOfRange.Add(1) // the cursor moved in between: a reader restarts
						continue
					}
					for _, ref := range refs {
						start := time.Now()
						_, err := e.store.Get(ctx, ref.FileKey, ref.ByteOffset, ref.ByteLength)
						if errors.Is(err, objectstore.ErrNotFound) {
							if start.Sub(asked) < grace/2 {
								missing.Add(1)
							} else {
								late.Add(1)
							}
						}
						reads.Add(1)
					}
				}
			}()
		}
		// Run until enough of each happened at once, however slow the
		// machine: files written, merged and deleted under the readers.
		enough := func() bool {
			return files.Load() >= 50 && merged.Load() >= 5 && deleted.Load() >= 10 && reads.Load() >= 200
		}
		for deadline := time.Now().Add(time.Minute); !enough(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				break // reported below
			}
		}
		close(stop)
		wg.Wait()
		st, _ := e.meta.TopicStorage(context.Background(), tp.ID)
		t.Logf("%d files written, %d merged, %d deleted, %d batch reads, %d out of range, %d missing objects (%d more read past half the grace period); storage at the end %+v",
			files.Load(), merged.Load(), deleted.Load(), reads.Load(), outOfRange.Load(), missing.Load(), late.Load(), st)
		if missing.Load() != 0 {
			t.Errorf("%d reads of a batch the metadata gave met a missing object within half the grace period of asking", missing.Load())
		}
		if !enough() {
			t.Errorf("the run did too little in a minute: %d reads, %d files, %d merged, %d deleted; want 200, 50, 5, 10",
				reads.Load(), files.Load(), merged.Load(), deleted.Load())
		}
	})
}
