package batcher_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.VerifyNoLeaks()) }

// countingStore counts PUTs and can block them.
type countingStore struct {
	objectstore.Store
	puts  atomic.Int64
	block chan struct{} // when not nil, puts wait for it to close
}

func (s *countingStore) Put(ctx context.Context, key string, data []byte, o objectstore.PutOptions) error {
	s.puts.Add(1)
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.Put(ctx, key, data, o)
}

// countingCommitter counts commit calls and the files in them, and can
// fail them.
type countingCommitter struct {
	metadata.Store
	commits atomic.Int64 // CommitFiles calls
	files   atomic.Int64 // files in those calls
	fail    atomic.Bool
}

func (c *countingCommitter) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	c.commits.Add(1)
	c.files.Add(int64(len(files)))
	if c.fail.Load() {
		return nil, fmt.Errorf("%w: injected commit failure", metadata.ErrNotApplied)
	}
	return c.Store.CommitFiles(ctx, files)
}

type env struct {
	meta   metadata.Store
	store  *countingStore
	mem    *objectstore.Memory
	commit *countingCommitter
	b      *batcher.Batcher
}

func newEnv(t *testing.T, cfg batcher.Config, wrap func(*objectstore.Memory) objectstore.Store) *env {
	t.Helper()
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	mem := objectstore.NewMemory()
	var inner objectstore.Store = mem
	if wrap != nil {
		inner = wrap(mem)
	}
	e := &env{meta: meta, mem: mem, store: &countingStore{Store: inner}, commit: &countingCommitter{Store: meta}}
	e.b, err = batcher.New(cfg, e.store, e.commit, batcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.b.Close(context.Background()) })
	return e
}

func (e *env) topic(t *testing.T, name string, parts int32) metadata.Topic {
	t.Helper()
	tp, err := e.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: name, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func batch(t testing.TB, n int, tag string) []byte {
	t.Helper()
	recs := make([]kbatch.Record, n)
	for i := range recs {
		recs[i] = kbatch.Record{Timestamp: 1700000000000 + int64(i), Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	b, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fastConfig() batcher.Config {
	c := batcher.DefaultConfig()
	c.Linger = 5 * time.Millisecond
	return c
}

// checkDense reads every partition back and checks offsets are dense from
// 0 to the high watermark and the stored bytes decode to records.
func checkDense(t *testing.T, e *env, topic metadata.Topic, want map[int32]int64) {
	t.Helper()
	ctx := context.Background()
	for p := int32(0); p < topic.Partitions; p++ {
		var next int64
		for {
			refs, st, err := e.meta.FindBatches(ctx, topic.ID, p, next, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) == 0 {
				if st.HighWatermark != want[p] {
					t.Fatalf("partition %d: high watermark %d, want %d", p, st.HighWatermark, want[p])
				}
				break
			}
			for _, r := range refs {
				if r.BaseOffset != next {
					t.Fatalf("partition %d: batch at %d, want %d (gap or overlap)", p, r.BaseOffset, next)
				}
				data, err := e.mem.Get(ctx, r.FileKey, r.ByteOffset, r.ByteLength)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				err = kbatch.Split(data, func(b []byte) error {
					_, recs, err := kbatch.Decode(b, 0)
					n += len(recs)
					return err
				})
				if err != nil || n != int(r.RecordCount) {
					t.Fatalf("partition %d batch %d: %d records, err %v", p, r.BaseOffset, n, err)
				}
				next = r.LastOffset + 1
			}
		}
	}
}

func TestManyProducersDenseOffsets(t *testing.T) {
	e := newEnv(t, fastConfig(), nil)
	topic := e.topic(t, "t", 8)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		want = map[int32]int64{}
	)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				p := int32(rand.IntN(8))
				n := 1 + rand.IntN(5)
				res, err := e.b.Produce(context.Background(), topic.ID, p, batch(t, n, "x"))
				if err != nil {
					t.Error(err)
					return
				}
				if res.BaseOffset < 0 {
					t.Errorf("negative offset %d", res.BaseOffset)
				}
				mu.Lock()
				want[p] += int64(n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	checkDense(t, e, topic, want)
	if puts, files := e.store.puts.Load(), e.commit.files.Load(); puts != files || puts == 0 {
		t.Fatalf("%d puts and %d files committed: want one of each per flush", puts, files)
	}
}

// One PUT and one commit per flush, whatever the partition count.
func TestOnePutOneCommitPerFlush(t *testing.T) {
	for _, parts := range []int32{1, 1000} {
		t.Run(fmt.Sprint(parts), func(t *testing.T) {
			cfg := batcher.DefaultConfig()
			cfg.Linger = time.Minute
			e := newEnv(t, cfg, nil)
			topic := e.topic(t, "t", parts)
			var wg sync.WaitGroup
			var appended sync.WaitGroup
			for p := int32(0); p < parts; p++ {
				wg.Add(1)
				appended.Add(1)
				go func() {
					defer wg.Done()
					pend, err := e.b.Append(context.Background(), topic.ID, p, batch(t, 3, "y"))
					appended.Done()
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := pend.Wait(context.Background()); err != nil {
						t.Error(err)
					}
				}()
			}
			appended.Wait()
			e.b.Flush()
			wg.Wait()
			if puts, commits := e.store.puts.Load(), e.commit.commits.Load(); puts != 1 || commits != 1 {
				t.Fatalf("%d partitions: %d puts and %d commits, want 1 and 1", parts, puts, commits)
			}
			want := map[int32]int64{}
			for p := int32(0); p < parts; p++ {
				want[p] = 3
			}
			checkDense(t, e, topic, want)
		})
	}
}

func TestSizeTriggersFlush(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	cfg.MaxFileBytes = 4096
	e := newEnv(t, cfg, nil)
	topic := e.topic(t, "t", 1)
	var pend []*batcher.Pending
	for i := 0; i < 20; i++ {
		p, err := e.b.Append(context.Background(), topic.ID, 0, batch(t, 50, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		pend = append(pend, p)
	}
	e.b.Flush()
	var last int64 = -1
	for _, p := range pend {
		res, err := p.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.BaseOffset <= last {
			t.Fatalf("offsets out of append order: %d after %d", res.BaseOffset, last)
		}
		last = res.BaseOffset
	}
	if puts := e.store.puts.Load(); puts < 3 {
		t.Fatalf("%d puts: size limit did not seal files", puts)
	}
	checkDense(t, e, topic, map[int32]int64{0: 1000})
}

// Uploads overlap but files commit in seal order: one producer's appends
// to one partition keep their order even when later uploads finish first.
func TestOrderKeptAcrossOverlappingUploads(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Millisecond
	cfg.MaxFileBytes = 2048
	cfg.MaxConcurrentUploads = 4
	e := newEnv(t, cfg, func(m *objectstore.Memory) objectstore.Store {
		return objectstore.WithFaults(m, objectstore.FaultConfig{Latency: 3 * time.Millisecond, Seed: 1})
	})
	topic := e.topic(t, "t", 2)
	var pend []*batcher.Pending
	for i := 0; i < 60; i++ {
		p, err := e.b.Append(context.Background(), topic.ID, int32(i%2), batch(t, 4, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		pend = append(pend, p)
	}
	last := map[int32]int64{0: -1, 1: -1}
	for i, p := range pend {
		res, err := p.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		part := int32(i % 2)
		if res.BaseOffset != last[part]+1 {
			t.Fatalf("append %d to partition %d got offset %d, want %d", i, part, res.BaseOffset, last[part]+1)
		}
		last[part] = res.BaseOffset + 3
	}
}

func TestUploadFailureFailsProducersAndCommitsNothing(t *testing.T) {
	var faulty *objectstore.Faulty
	e := newEnv(t, fastConfig(), func(m *objectstore.Memory) objectstore.Store {
		faulty = objectstore.WithFaults(m, objectstore.FaultConfig{ErrorRate: 1, Seed: 1})
		return faulty
	})
	topic := e.topic(t, "t", 2)
	_, err := e.b.Produce(context.Background(), topic.ID, 0, batch(t, 5, "z"))
	var fe *batcher.FlushError
	if !errors.As(err, &fe) || fe.Stage != batcher.StageUpload || fe.Ambiguous {
		t.Fatalf("got %v, want a definite upload FlushError", err)
	}
	if e.commit.commits.Load() != 0 {
		t.Fatal("a file whose upload failed was committed")
	}
	checkDense(t, e, topic, map[int32]int64{})
	// The store recovers: the next produce succeeds at offset 0.
	faulty.Set(objectstore.FaultConfig{})
	res, err := e.b.Produce(context.Background(), topic.ID, 0, batch(t, 5, "z"))
	if err != nil || res.BaseOffset != 0 {
		t.Fatalf("after recovery: offset %d, err %v", res.BaseOffset, err)
	}
}

func TestCommitFailureFailsProducers(t *testing.T) {
	e := newEnv(t, fastConfig(), nil)
	topic := e.topic(t, "t", 1)
	e.commit.fail.Store(true)
	_, err := e.b.Produce(context.Background(), topic.ID, 0, batch(t, 2, "c"))
	var fe *batcher.FlushError
	if !errors.As(err, &fe) || fe.Stage != batcher.StageCommit || fe.Ambiguous {
		t.Fatalf("got %v, want a definite commit FlushError", err)
	}
	if n := e.commit.commits.Load(); n != 1 {
		t.Fatalf("a definite commit failure was tried %d times, want once", n)
	}
	checkDense(t, e, topic, map[int32]int64{})
	e.commit.fail.Store(false)
	if res, err := e.b.Produce(context.Background(), topic.ID, 0, batch(t, 2, "c")); err != nil || res.BaseOffset != 0 {
		t.Fatalf("after recovery: offset %d, err %v", res.BaseOffset, err)
	}
}

func TestBackpressure(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxFileBytes = 4096
	cfg.MaxBufferedBytes = 8192
	e := newEnv(t, cfg, nil)
	e.store.block = make(chan struct{})
	topic := e.topic(t, "t", 1)
	b := batch(t, 20, "bp")
	var pend []*batcher.Pending
	var err error
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		var p *batcher.Pending
		p, err = e.b.Append(ctx, topic.ID, 0, b)
		cancel()
		if err != nil {
			break
		}
		pend = append(pend, p)
	}
	if !errors.Is(err, batcher.ErrBackpressure) {
		t.Fatalf("got %v after %d appends, want ErrBackpressure", err, len(pend))
	}
	if got := len(pend) * len(b); got > int(cfg.MaxBufferedBytes) {
		t.Fatalf("%d bytes accepted beyond the %d bound", got, cfg.MaxBufferedBytes)
	}
	close(e.store.block)
	for _, p := range pend {
		if _, err := p.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Space is released: appends go through again.
	if _, err := e.b.Produce(context.Background(), topic.ID, 0, b); err != nil {
		t.Fatal(err)
	}
}

func TestCloseFlushesAndRefuses(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	e := newEnv(t, cfg, nil)
	topic := e.topic(t, "t", 1)
	p, err := e.b.Append(context.Background(), topic.ID, 0, batch(t, 1, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(context.Background()); err != nil {
		t.Fatalf("close did not flush: %v", err)
	}
	if _, err := e.b.Append(context.Background(), topic.ID, 0, batch(t, 1, "c")); !errors.Is(err, batcher.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

// Close giving up mid-upload: the producers get errors and nothing is committed.
func TestCloseAbortsStuckUpload(t *testing.T) {
	e := newEnv(t, fastConfig(), nil)
	e.store.block = make(chan struct{})
	topic := e.topic(t, "t", 1)
	p, err := e.b.Append(context.Background(), topic.ID, 0, batch(t, 1, "c"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.b.Close(ctx); err == nil {
		t.Fatal("close of a stuck batcher reported success")
	}
	if _, err := p.Wait(context.Background()); err == nil {
		t.Fatal("producer of an aborted file was acknowledged")
	}
	checkDense(t, e, topic, map[int32]int64{})
}

func TestConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*batcher.Config){
		"buffer":         func(c *batcher.Config) { c.MaxBufferedBytes = 10 },
		"upload timeout": func(c *batcher.Config) { c.UploadTimeout = 0 },
		"commit timeout": func(c *batcher.Config) { c.CommitTimeout = -time.Second },
		"huge timeout":   func(c *batcher.Config) { c.CommitTimeout = time.Hour },
	} {
		bad := batcher.DefaultConfig()
		mutate(&bad)
		if _, err := batcher.New(bad, objectstore.NewMemory(), &countingCommitter{}, batcher.Options{}); err == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}

var _ = logfile.HeaderSize

// A file of many batches over few partitions commits one row per run of a
// partition's batches; an idempotent batch is a row of its own; every
// producer gets the offsets its records really have.
func TestRunsPerPartition(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	e := newEnv(t, cfg, nil)
	topic := e.topic(t, "t", 2)
	pid, epoch, err := e.meta.InitProducer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type sent struct {
		p    *batcher.Pending
		part int32
		tag  string
	}
	var all []sent
	for i := 0; i < 40; i++ {
		part := int32(i % 2)
		tag := fmt.Sprint("b", i)
		data := batch(t, 3, tag)
		if i == 20 { // partition 0, in the middle of its batches
			opts := kbatch.DefaultEncodeOptions()
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, 0
			if data, err = kbatch.Encode([]kbatch.Record{{Timestamp: 1, Value: []byte(tag + "-0")}, {Timestamp: 1, Value: []byte(tag + "-1")},
				{Timestamp: 1, Value: []byte(tag + "-2")}}, opts); err != nil {
				t.Fatal(err)
			}
		}
		p, err := e.b.Append(context.Background(), topic.ID, part, data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{p, part, tag})
	}
	e.b.Flush()
	for _, s := range all {
		res, err := s.p.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The record at the returned offset is this batch's first one.
		refs, _, err := e.meta.FindBatches(context.Background(), topic.ID, s.part, res.BaseOffset, 1)
		if err != nil || len(refs) != 1 {
			t.Fatalf("find %d: %v %v", res.BaseOffset, refs, err)
		}
		data, err := e.mem.Get(context.Background(), refs[0].FileKey, refs[0].ByteOffset, refs[0].ByteLength)
		if err != nil {
			t.Fatal(err)
		}
		off, found := refs[0].BaseOffset, ""
		_ = kbatch.Split(data, func(b []byte) error {
			_, recs, err := kbatch.Decode(b, 0)
			for _, r := range recs {
				if off == res.BaseOffset {
					found = string(r.Value)
				}
				off++
			}
			return err
		})
		if found != s.tag+"-0" {
			t.Fatalf("batch %s acknowledged at %d, which holds %q", s.tag, res.BaseOffset, found)
		}
	}
	if e.commit.commits.Load() != 1 {
		t.Fatalf("%d commits", e.commit.commits.Load())
	}
	for part, wantRows := range map[int32]int{0: 3, 1: 1} {
		refs, _, err := e.meta.FindBatches(context.Background(), topic.ID, part, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != wantRows {
			t.Fatalf("partition %d: %d rows, want %d", part, len(refs), wantRows)
		}
	}
	checkDense(t, e, topic, map[int32]int64{0: 60, 1: 60})
}
