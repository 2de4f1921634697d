package batcher_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// commitFault is what fakeMeta does with one CommitFiles call.
type commitFault int

const (
	commitPass   commitFault = iota
	commitLose               // commit, then answer an error (the answer was lost)
	commitReset              // answer an ambiguous error without committing
	commitRefuse             // answer metadata.ErrNotApplied without committing
	commitHang               // block until the call's context ends
)

// fakeMeta is a Committer following metadata.Store's contract: offsets
// per partition, the files of a call in order and all together, and
// idempotent by file key (a re-commit answers the first commit's
// results). Faults are scripted per call.
type fakeMeta struct {
	mu      sync.Mutex // protects the fields below
	hw      map[[2]int64]int64
	files   map[string][]metadata.BatchResult
	calls   []string      // the file keys of each call, joined by "+"
	script  []commitFault // faults of the next calls, then always
	always  commitFault
	started chan string // receives each call's keys if not nil (never blocks)
}

func newFakeMeta() *fakeMeta {
	return &fakeMeta{hw: map[[2]int64]int64{}, files: map[string][]metadata.BatchResult{}, started: make(chan string, 100)}
}

// next scripts the next n calls; then a fault of always.
func (m *fakeMeta) next(n int, f commitFault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range n {
		m.script = append(m.script, f)
	}
}

func (m *fakeMeta) setAlways(f commitFault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.always = f
}

func (m *fakeMeta) CommitFiles(ctx context.Context, fcs []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	keys := make([]string, len(fcs))
	for i, fc := range fcs {
		keys[i] = fc.Key
	}
	call := strings.Join(keys, "+")
	m.mu.Lock()
	m.calls = append(m.calls, call)
	fault := m.always
	if len(m.script) > 0 {
		fault, m.script = m.script[0], m.script[1:]
	}
	m.mu.Unlock()
	select {
	case m.started <- call:
	default:
	}
	switch fault {
	case commitRefuse:
		return nil, fmt.Errorf("%w: connection refused", metadata.ErrNotApplied)
	case commitReset:
		return nil, errors.New("connection reset by peer")
	case commitHang:
		<-ctx.Done()
		return nil, fmt.Errorf("commit: %w", ctx.Err())
	}
	out := make([][]metadata.BatchResult, len(fcs))
	m.mu.Lock()
	for i, fc := range fcs {
		res, ok := m.files[fc.Key]
		if !ok {
			for _, b := range fc.Batches {
				k := [2]int64{b.TopicID, int64(b.Partition)}
				res = append(res, metadata.BatchResult{BaseOffset: m.hw[k]})
				m.hw[k] += int64(b.RecordCount)
			}
			m.files[fc.Key] = res
		}
		out[i] = res
	}
	m.mu.Unlock()
	if fault == commitLose {
		return nil, errors.New("connection reset by peer after the commit")
	}
	return out, nil
}

func (m *fakeMeta) highWatermark(topic int64, part int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hw[[2]int64{topic, int64(part)}]
}

func (m *fakeMeta) callKeys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

func (m *fakeMeta) committed(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.files[key]
	return ok
}

// logRecord is one captured log line.
type logRecord struct {
	level slog.Level
	msg   string
	key   string
}

// logCapture is a slog.Handler keeping every record.
type logCapture struct {
	mu   sync.Mutex // protects recs
	recs []logRecord
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			rec.key = a.Value.String()
		}
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, rec)
	return nil
}

// errors returns the ERROR records.
func (c *logCapture) errors() []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logRecord
	for _, r := range c.recs {
		if r.level >= slog.LevelError {
			out = append(out, r)
		}
	}
	return out
}

// fakeEnv is a batcher on fakeMeta and an in-memory store with faults.
type fakeEnv struct {
	meta  *fakeMeta
	mem   *objectstore.Memory
	store *objectstore.Faulty
	logs  *logCapture
	b     *batcher.Batcher
}

func newFakeEnv(t *testing.T, cfg batcher.Config, wrap func(objectstore.Store) objectstore.Store) *fakeEnv {
	t.Helper()
	e := &fakeEnv{meta: newFakeMeta(), mem: objectstore.NewMemory(), logs: &logCapture{}}
	e.store = objectstore.WithFaults(e.mem, objectstore.FaultConfig{})
	var s objectstore.Store = e.store
	if wrap != nil {
		s = wrap(s)
	}
	var err error
	e.b, err = batcher.New(cfg, s, e.meta, batcher.Options{Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.b.Close(context.Background()) })
	return e
}

func manualConfig() batcher.Config {
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute // files are sealed by Flush
	return cfg
}

func appendBatch(t *testing.T, b *batcher.Batcher, part int32, records int) *batcher.Pending {
	t.Helper()
	p, err := b.Append(context.Background(), 1, part, batch(t, records, fmt.Sprint("p", part)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func flushError(t *testing.T, err error, stage string, ambiguous bool) *batcher.FlushError {
	t.Helper()
	var fe *batcher.FlushError
	if !errors.As(err, &fe) || fe.Stage != stage || fe.Ambiguous != ambiguous {
		t.Fatalf("got %v, want a FlushError at stage %s with Ambiguous=%v", err, stage, ambiguous)
	}
	return fe
}

// A commit that landed and whose answer was lost is retried with the same
// file key; the retry answers with the stored results, so each producer
// gets its real offsets once and nothing is committed twice.
func TestLostCommitAnswerGivesRealOffsetsOnce(t *testing.T) {
	e := newFakeEnv(t, manualConfig(), nil)
	e.meta.next(1, commitLose)
	p1, p2, p3 := appendBatch(t, e.b, 0, 2), appendBatch(t, e.b, 0, 3), appendBatch(t, e.b, 1, 4)
	e.b.Flush()
	for i, c := range []struct {
		p    *batcher.Pending
		want int64
	}{{p1, 0}, {p2, 2}, {p3, 0}} {
		res, err := c.p.Wait(context.Background())
		if err != nil || res.BaseOffset != c.want {
			t.Fatalf("producer %d: offset %d, err %v; want offset %d", i, res.BaseOffset, err, c.want)
		}
	}
	keys := e.meta.callKeys()
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Fatalf("commit calls %v: want the same file key twice", keys)
	}
	if hw0, hw1 := e.meta.highWatermark(1, 0), e.meta.highWatermark(1, 1); hw0 != 5 || hw1 != 4 {
		t.Fatalf("high watermarks %d and %d, want 5 and 4 (no duplicate)", hw0, hw1)
	}
	if errs := e.logs.errors(); len(errs) != 0 {
		t.Fatalf("a recovered commit logged errors: %v", errs)
	}
	// The next file continues the log.
	p := appendBatch(t, e.b, 0, 1)
	e.b.Flush()
	if res, err := p.Wait(context.Background()); err != nil || res.BaseOffset != 5 {
		t.Fatalf("next produce: offset %d, err %v; want 5", res.BaseOffset, err)
	}
}

// A commit refused before it reached the store (metadata.NotApplied) is a
// definite failure, answered at once without retries, and logged once.
func TestRefusedCommitIsDefinite(t *testing.T) {
	e := newFakeEnv(t, manualConfig(), nil)
	e.meta.next(1, commitRefuse)
	p := appendBatch(t, e.b, 0, 2)
	e.b.Flush()
	_, err := p.Wait(context.Background())
	flushError(t, err, batcher.StageCommit, false)
	if !errors.Is(err, metadata.ErrNotApplied) {
		t.Fatalf("%v does not wrap the store's error", err)
	}
	keys := e.meta.callKeys()
	if len(keys) != 1 || e.meta.committed(keys[0]) {
		t.Fatalf("commit calls %v: want one, not committed", keys)
	}
	if errs := e.logs.errors(); len(errs) != 1 || errs[0].key != keys[0] {
		t.Fatalf("error logs %v: want one naming %s", errs, keys[0])
	}
	p = appendBatch(t, e.b, 0, 2)
	e.b.Flush()
	if res, err := p.Wait(context.Background()); err != nil || res.BaseOffset != 0 {
		t.Fatalf("after the refusal: offset %d, err %v; want 0", res.BaseOffset, err)
	}
}

// A hung commit is retried within its one deadline and answered, as
// outcome unknown, at that deadline. The file sealed after it is not held
// past its own deadline: it fails definitely, never sent. Each failure is
// logged once at ERROR, each attempt at DEBUG.
func TestHungCommitIsAmbiguousAtDeadline(t *testing.T) {
	cfg := manualConfig()
	cfg.CommitTimeout = 400 * time.Millisecond
	cfg.MaxFilesPerCommit = 1 // the second file waits, uploaded, behind the first (see TestHungMultiFileCommit)
	e := newFakeEnv(t, cfg, nil)
	e.meta.setAlways(commitHang)
	start := time.Now()
	pa := appendBatch(t, e.b, 0, 1)
	e.b.Flush()
	pb := appendBatch(t, e.b, 0, 1)
	e.b.Flush()
	_, err := pa.Wait(context.Background())
	elapsed := time.Since(start)
	flushError(t, err, batcher.StageCommit, true)
	if elapsed < cfg.CommitTimeout || elapsed > cfg.CommitTimeout+time.Second {
		t.Fatalf("hung commit answered after %v, want at its %v deadline", elapsed, cfg.CommitTimeout)
	}
	_, err = pb.Wait(context.Background())
	flushError(t, err, batcher.StageCommit, false)
	if d := time.Since(start); d > cfg.CommitTimeout+time.Second {
		t.Fatalf("the file after a hung commit answered after %v", d)
	}
	keys := e.meta.callKeys()
	if len(keys) < 2 || keys[0] != keys[len(keys)-1] {
		t.Fatalf("commit calls %v: want retries of the first file only", keys)
	}
	if errs := e.logs.errors(); len(errs) != 2 || errs[0].key != keys[0] || errs[1].key == keys[0] {
		t.Fatalf("error logs %v: want one per failed file", errs)
	}
}

// An ambiguous failure followed by definite ones stays ambiguous: the
// first attempt may have landed.
func TestAmbiguousThenRefusedStaysAmbiguous(t *testing.T) {
	cfg := manualConfig()
	cfg.CommitTimeout = 300 * time.Millisecond
	e := newFakeEnv(t, cfg, nil)
	e.meta.next(1, commitLose)
	e.meta.setAlways(commitRefuse)
	p := appendBatch(t, e.b, 0, 1)
	e.b.Flush()
	_, err := p.Wait(context.Background())
	flushError(t, err, batcher.StageCommit, true)
	if keys := e.meta.callKeys(); len(keys) < 2 || !e.meta.committed(keys[0]) {
		t.Fatalf("commit calls %v: want retries after the lost answer", keys)
	}
}

// A hung upload fails the file's producers definitely at the upload
// deadline; the file sealed after it goes on and commits.
func TestHungUploadFailsWithinDeadline(t *testing.T) {
	cfg := manualConfig()
	cfg.UploadTimeout = 300 * time.Millisecond
	sig := &signalPut{started: make(chan string, 10)}
	e := newFakeEnv(t, cfg, func(s objectstore.Store) objectstore.Store { sig.Store = s; return sig })
	e.store.Next(objectstore.OpPut, 1, objectstore.FaultHang)
	start := time.Now()
	pa := appendBatch(t, e.b, 0, 2)
	e.b.Flush()
	<-sig.started // the hung put is the first file's
	pb := appendBatch(t, e.b, 0, 3)
	e.b.Flush()
	_, err := pa.Wait(context.Background())
	flushError(t, err, batcher.StageUpload, false)
	if d := time.Since(start); d > cfg.UploadTimeout+time.Second {
		t.Fatalf("hung upload answered after %v, deadline %v", d, cfg.UploadTimeout)
	}
	res, err := pb.Wait(context.Background())
	if err != nil || res.BaseOffset != 0 {
		t.Fatalf("file after the hung one: offset %d, err %v; want 0", res.BaseOffset, err)
	}
	if d := time.Since(start); d > cfg.UploadTimeout+time.Second {
		t.Fatalf("the file after a hung upload answered after %v", d)
	}
	if keys := e.meta.callKeys(); len(keys) != 1 {
		t.Fatalf("commit calls %v: want only the second file's", keys)
	}
	if errs := e.logs.errors(); len(errs) != 1 || errs[0].msg != "file upload failed" || errs[0].key == "" {
		t.Fatalf("error logs %v: want one failed upload with its key", errs)
	}
}

// signalPut tells when each Put starts.
type signalPut struct {
	objectstore.Store
	started chan string
}

func (s *signalPut) Put(ctx context.Context, key string, data []byte, o objectstore.PutOptions) error {
	s.started <- key
	return s.Store.Put(ctx, key, data, o)
}

// stuckPut blocks the first Put, ignoring its context, until release is
// closed, then lets it through: a store that recovers after the deadline.
type stuckPut struct {
	objectstore.Store
	release chan struct{}
	first   atomic.Bool
	key     atomic.Value // of the stuck put
}

func (s *stuckPut) Put(ctx context.Context, key string, data []byte, o objectstore.PutOptions) error {
	if s.first.CompareAndSwap(false, true) {
		s.key.Store(key)
		<-s.release
		return s.Store.Put(context.Background(), key, data, o)
	}
	return s.Store.Put(ctx, key, data, o)
}

// A file whose producers were told its upload failed is never committed,
// even when the store ignores the deadline and stores it afterwards.
func TestFailedUploadNeverCommittedAfterRecovery(t *testing.T) {
	cfg := manualConfig()
	cfg.UploadTimeout = 300 * time.Millisecond
	stuck := &stuckPut{release: make(chan struct{})}
	e := newFakeEnv(t, cfg, func(s objectstore.Store) objectstore.Store { stuck.Store = s; return stuck })
	var once sync.Once
	release := func() { once.Do(func() { close(stuck.release) }) }
	t.Cleanup(release) // runs before the batcher's Close
	pa := appendBatch(t, e.b, 0, 2)
	e.b.Flush()
	for stuck.key.Load() == nil { // the stuck put is the first file's
		time.Sleep(time.Millisecond)
	}
	pb := appendBatch(t, e.b, 0, 3)
	e.b.Flush()
	_, err := pa.Wait(context.Background())
	flushError(t, err, batcher.StageUpload, false)
	if res, err := pb.Wait(context.Background()); err != nil || res.BaseOffset != 0 {
		t.Fatalf("file after the stuck one: offset %d, err %v; want 0", res.BaseOffset, err)
	}
	release() // the store recovers and stores the failed file
	if err := e.b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	key := stuck.key.Load().(string)
	if _, err := e.mem.Head(context.Background(), key); err != nil {
		t.Fatalf("the stuck put did not land after the release: %v", err)
	}
	if e.meta.committed(key) || len(e.meta.callKeys()) != 1 {
		t.Fatalf("commit calls %v: the failed file %s was committed", e.meta.callKeys(), key)
	}
	if hw := e.meta.highWatermark(1, 0); hw != 3 {
		t.Fatalf("high watermark %d, want 3", hw)
	}
}

// A producer whose wait ends during the commit gets "outcome unknown",
// not a plain context error.
func TestWaitEndingDuringCommitIsAmbiguous(t *testing.T) {
	cfg := manualConfig()
	cfg.CommitTimeout = 500 * time.Millisecond
	e := newFakeEnv(t, cfg, nil)
	e.meta.setAlways(commitHang)
	p := appendBatch(t, e.b, 0, 1)
	e.b.Flush()
	<-e.meta.started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Wait(ctx)
	flushError(t, err, batcher.StageCommit, true)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not wrap the context's error", err)
	}
}

// A producer whose wait ends before its file's commit started is told, for
// sure, that its batch failed, and the batch is left out of the commit:
// the batches around it get the offsets, and no committed run covers its
// bytes (checkDense reads every committed run back).
func TestWithdrawnBatchIsNotCommitted(t *testing.T) {
	cfg := manualConfig()
	e := newEnv(t, cfg, nil)
	e.store.block = make(chan struct{})
	topic := e.topic(t, "t", 1)
	app := func(n int) *batcher.Pending {
		p, err := e.b.Append(context.Background(), topic.ID, 0, batch(t, n, fmt.Sprint("w", n)))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1, p2, p3 := app(2), app(3), app(1)
	e.b.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p2.Wait(ctx)
	flushError(t, err, batcher.StageWithdraw, false)
	if !errors.Is(err, batcher.ErrWithdrawn) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v: want ErrWithdrawn and the context's error", err)
	}
	close(e.store.block)
	for _, c := range []struct {
		p    *batcher.Pending
		want int64
	}{{p1, 0}, {p3, 2}} {
		if res, err := c.p.Wait(context.Background()); err != nil || res.BaseOffset != c.want {
			t.Fatalf("offset %d, err %v; want %d", res.BaseOffset, err, c.want)
		}
	}
	// Asking again gives the same answer.
	if _, err := p2.Wait(context.Background()); !errors.Is(err, batcher.ErrWithdrawn) {
		t.Fatalf("second wait of a withdrawn batch: %v", err)
	}
	checkDense(t, e, topic, map[int32]int64{0: 3})
}

// Every producer of a file withdrawn: nothing is committed.
func TestAllWithdrawnCommitsNothing(t *testing.T) {
	e := newEnv(t, manualConfig(), nil)
	e.store.block = make(chan struct{})
	topic := e.topic(t, "t", 1)
	p, err := e.b.Append(context.Background(), topic.ID, 0, batch(t, 2, "a"))
	if err != nil {
		t.Fatal(err)
	}
	e.b.Flush()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, batcher.ErrWithdrawn) {
		t.Fatalf("got %v, want ErrWithdrawn", err)
	}
	close(e.store.block)
	if err := e.b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.commit.commits.Load(); n != 0 {
		t.Fatalf("%d commits of a file whose every batch was withdrawn", n)
	}
	checkDense(t, e, topic, map[int32]int64{})
}
