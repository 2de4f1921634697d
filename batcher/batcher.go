// Package batcher collects the record batches of every producer and
// partition of one agent into one object file, flushes it on linger or size
// with one PUT and one metadata commit, and only then completes the
// producers waiting on it.
//
// Pipeline: Produce appends to the open file; sealing moves it to a FIFO;
// the run goroutine starts its upload (at most MaxConcurrentUploads at once)
// and hands it to the commit goroutine, which commits files strictly in seal
// order, so one producer's batches to one partition keep their order even
// though uploads overlap.
package batcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/semaphore"

	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// Committer assigns offsets to a stored file's batches (metadata.Store).
type Committer interface {
	CommitFile(ctx context.Context, f metadata.FileCommit) ([]metadata.BatchResult, error)
}

// Uploader stores a file (objectstore.Store).
type Uploader interface {
	Put(ctx context.Context, key string, data []byte, opts objectstore.PutOptions) error
}

// CommittedFile is handed to the OnCommit hook after a successful commit.
type CommittedFile struct {
	Key     string
	Data    []byte
	Entries []logfile.Entry
	Results []metadata.BatchResult
}

// Options are a Batcher's collaborators.
type Options struct {
	Logger *slog.Logger
	// Metrics, optional (NewMetrics(reg)).
	Metrics *Metrics
	// OnCommit, optional, is called from the commit goroutine after each
	// committed file (the agent's read cache uses it). It must not block long.
	OnCommit func(CommittedFile)
}

// Batcher is one agent's produce buffer.
type Batcher struct {
	cfg       Config
	store     Uploader
	committer Committer
	opts      Options
	log       *slog.Logger
	m         *Metrics

	mem     *semaphore.Weighted // bytes accepted and not yet acknowledged
	uploads chan struct{}       // upload slots

	ctx    context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc

	mu       sync.Mutex // protects cur, queue, closed, avgFile, lastFile
	cur      *file
	queue    []*file // sealed, not yet started
	closed   bool
	avgFile  float64 // moving average of sealed file sizes
	lastFile float64 // size of the last sealed file

	wake     chan struct{} // poked when queue grows or on close
	commitQ  chan *file
	runDone  chan struct{}
	commDone chan struct{}
	upWG     sync.WaitGroup // upload goroutines
}

type waiter struct {
	size int64
	res  metadata.BatchResult
	err  error
	done chan struct{}
}

type file struct {
	w        *logfile.Writer
	waiters  []*waiter
	timer    *time.Timer
	sealedAt time.Time
	key      string
	data     []byte
	uploaded chan error
}

// New starts a Batcher. Close stops it.
func New(cfg Config, store Uploader, committer Committer, opts Options) (*Batcher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if store == nil || committer == nil {
		return nil, errors.New("batcher: store and committer are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher{
		cfg: cfg, store: store, committer: committer, opts: opts,
		log: opts.Logger, m: opts.Metrics,
		mem:      semaphore.NewWeighted(cfg.MaxBufferedBytes),
		uploads:  make(chan struct{}, cfg.MaxConcurrentUploads),
		ctx:      ctx,
		cancel:   cancel,
		wake:     make(chan struct{}, 1),
		commitQ:  make(chan *file, cfg.MaxConcurrentUploads),
		runDone:  make(chan struct{}),
		commDone: make(chan struct{}),
	}
	go b.run()
	go b.commitLoop()
	return b, nil
}

// Produce adds one encoded Kafka v2 record batch for a partition and waits
// until its file is stored and committed, returning the batch's offsets.
// It blocks while the buffer is full (backpressure) until ctx ends.
func (b *Batcher) Produce(ctx context.Context, topicID int64, partition int32, batch []byte) (metadata.BatchResult, error) {
	p, err := b.Append(ctx, topicID, partition, batch)
	if err != nil {
		return metadata.BatchResult{}, err
	}
	return p.Wait(ctx)
}

// Pending is an appended batch waiting for its file's commit.
type Pending struct{ w *waiter }

// Wait blocks until the batch's file is committed or failed, or ctx ends
// (the batch may then still be committed: the caller cannot know).
func (p *Pending) Wait(ctx context.Context) (metadata.BatchResult, error) {
	select {
	case <-p.w.done:
		return p.w.res, p.w.err
	case <-ctx.Done():
		return metadata.BatchResult{}, fmt.Errorf("batcher: wait for commit: %w", ctx.Err())
	}
}

// Append adds the batch to the open file and returns at once; batches
// appended in sequence are committed in that order. It blocks only while
// the buffer is full (backpressure), until ctx ends.
func (b *Batcher) Append(ctx context.Context, topicID int64, partition int32, batch []byte) (*Pending, error) {
	n := int64(len(batch))
	if len(batch)+logfile.HeaderSize+logfile.TrailerSize+128 > b.cfg.MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(batch), b.cfg.MaxFileBytes)
	}
	if !b.mem.TryAcquire(n) {
		b.m.backpressure()
		if err := b.mem.Acquire(ctx, n); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBackpressure, err)
		}
	}
	b.m.buffered(n)
	w := &waiter{size: n, done: make(chan struct{})}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.release(n)
		return nil, ErrClosed
	}
	if b.cur != nil && b.cur.w.Len()+len(batch)+64 > b.cfg.MaxFileBytes {
		b.sealLocked()
	}
	if b.cur == nil {
		f := &file{w: logfile.NewWriter(b.sizeHint())}
		if b.cfg.Linger > 0 {
			f.timer = time.AfterFunc(b.cfg.Linger, func() {
				b.mu.Lock()
				defer b.mu.Unlock()
				if b.cur == f {
					b.sealLocked()
				}
			})
		}
		b.cur = f
	}
	if _, err := b.cur.w.Append(topicID, partition, batch); err != nil {
		b.mu.Unlock()
		b.release(n)
		return nil, fmt.Errorf("batcher: append batch: %w", err)
	}
	b.cur.waiters = append(b.cur.waiters, w)
	if b.cfg.Linger == 0 || b.cur.w.Len() >= b.cfg.MaxFileBytes {
		b.sealLocked()
	}
	b.mu.Unlock()
	return &Pending{w: w}, nil
}

// sizeHint is the buffer size for a new file: a little more than the
// recent files' average, so that busy agents do not regrow (and copy) the
// buffer several times per file, and idle ones do not allocate the
// maximum. b.mu is held.
func (b *Batcher) sizeHint() int {
	return min(b.cfg.MaxFileBytes, max(64<<10, int(max(b.avgFile, b.lastFile)*1.25)))
}

// sealLocked closes the open file and queues it for upload. b.mu is held.
func (b *Batcher) sealLocked() {
	f := b.cur
	if f == nil {
		return
	}
	b.cur = nil
	// Recent file sizes: the last one and a moving average.
	b.lastFile = float64(f.w.Len())
	b.avgFile = 0.5*b.avgFile + 0.5*b.lastFile
	if f.timer != nil {
		f.timer.Stop()
	}
	f.sealedAt = time.Now()
	b.queue = append(b.queue, f)
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Flush seals the open file now (tests and shutdown).
func (b *Batcher) Flush() {
	b.mu.Lock()
	b.sealLocked()
	b.mu.Unlock()
}

// Close flushes what is buffered and waits for it to be committed, until ctx
// ends; then it aborts what is left (those producers get errors).
func (b *Batcher) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.commDone
		return nil
	}
	b.closed = true
	b.sealLocked()
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	var err error
	select {
	case <-b.commDone:
	case <-ctx.Done():
		err = fmt.Errorf("batcher: close: %w", ctx.Err())
		b.cancel()
		<-b.commDone
	}
	<-b.runDone
	b.upWG.Wait()
	b.cancel()
	return err
}

func (b *Batcher) release(n int64) {
	b.mem.Release(n)
	b.m.buffered(-n)
}

// run starts uploads in seal order and feeds the commit goroutine.
func (b *Batcher) run() {
	defer close(b.runDone)
	defer close(b.commitQ)
	for {
		b.mu.Lock()
		q := b.queue
		b.queue = nil
		closed := b.closed
		b.mu.Unlock()
		for _, f := range q {
			select {
			case b.uploads <- struct{}{}:
			case <-b.ctx.Done():
				// Aborting: still hand it on so its producers get an answer.
				f.uploaded = make(chan error, 1)
				f.uploaded <- b.ctx.Err()
				b.commitQ <- f
				continue
			}
			f.data = f.w.Finish()
			f.key = b.newKey()
			f.uploaded = make(chan error, 1)
			b.upWG.Add(1)
			go b.upload(f)
			b.commitQ <- f
		}
		if closed && len(q) == 0 {
			return
		}
		if len(q) > 0 {
			continue
		}
		<-b.wake
	}
}

func (b *Batcher) newKey() string {
	id := ulid.Make()
	return fmt.Sprintf("%sv1/files/%02x/%s", b.cfg.KeyPrefix, id[15], id.String())
}

// upload PUTs one file, retrying transient failures. An ErrExists after a
// failed attempt means that attempt was applied and its answer lost: keys
// are unique, so the object is ours.
func (b *Batcher) upload(f *file) {
	defer b.upWG.Done()
	defer func() { <-b.uploads }()
	start := time.Now()
	var err error
	for attempt := 1; attempt <= b.cfg.UploadAttempts; attempt++ {
		err = b.store.Put(b.ctx, f.key, f.data, objectstore.PutOptions{IfAbsent: true})
		if err == nil || (attempt > 1 && errors.Is(err, objectstore.ErrExists)) {
			err = nil
			break
		}
		if objectstore.IsPermanent(err) || b.ctx.Err() != nil || attempt == b.cfg.UploadAttempts {
			break
		}
		b.log.Warn("file upload failed, retrying", "key", f.key, "attempt", attempt, "err", err)
		select {
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		case <-b.ctx.Done():
		}
	}
	b.m.upload(time.Since(start), len(f.data), err)
	f.uploaded <- err
}

// commitLoop commits uploaded files in seal order and answers producers.
func (b *Batcher) commitLoop() {
	defer close(b.commDone)
	for f := range b.commitQ {
		b.finish(f)
	}
}

func (b *Batcher) finish(f *file) {
	defer func() {
		for _, w := range f.waiters {
			b.release(w.size)
			close(w.done)
		}
	}()
	if err := <-f.uploaded; err != nil {
		b.failAll(f, &FlushError{Stage: "upload", Err: err})
		return
	}
	entries := f.w.Entries()
	fc := metadata.FileCommit{Key: f.key, Size: int64(len(f.data)), Batches: make([]metadata.BatchCommit, len(entries))}
	partitions := make(map[[2]int64]struct{}, len(entries))
	for i, e := range entries {
		fc.Batches[i] = metadata.BatchCommit{
			TopicID: e.TopicID, Partition: e.Partition,
			ByteOffset: e.ByteOffset, ByteLength: e.ByteLength,
			RecordCount: e.RecordCount, MaxTimestamp: e.MaxTimestamp,
			ProducerID: e.ProducerID, ProducerEpoch: e.ProducerEpoch, BaseSequence: e.BaseSequence,
		}
		partitions[[2]int64{e.TopicID, int64(e.Partition)}] = struct{}{}
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(b.ctx, b.cfg.CommitTimeout)
	results, err := b.committer.CommitFile(cctx, fc)
	cancel()
	b.m.commit(time.Since(start), err)
	if err == nil && len(results) != len(entries) {
		err = fmt.Errorf("batcher: commit returned %d results for %d batches", len(results), len(entries))
	}
	if err != nil {
		b.log.Warn("file commit failed", "key", f.key, "batches", len(entries), "err", err)
		b.failAll(f, &FlushError{Stage: "commit", Ambiguous: !isDefiniteRefusal(err), Err: err})
		return
	}
	b.m.flush(len(f.data), len(entries), len(partitions), time.Since(f.sealedAt))
	for i, w := range f.waiters {
		w.res = results[i]
		if results[i].Err != nil {
			w.err = results[i].Err
		}
	}
	if b.opts.OnCommit != nil {
		b.opts.OnCommit(CommittedFile{Key: f.key, Data: f.data, Entries: entries, Results: results})
	}
}

func (b *Batcher) failAll(f *file, err error) {
	for _, w := range f.waiters {
		w.err = err
	}
}

// isDefiniteRefusal reports errors after which the commit surely did not happen.
func isDefiniteRefusal(err error) bool {
	return errors.Is(err, metadata.ErrInvalidCommit) || errors.Is(err, metadata.ErrClosed)
}
