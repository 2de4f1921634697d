// Package batcher collects the record batches of every producer and
// partition of one agent into one object file, flushes it on linger or size
// with one PUT and one metadata commit, and only then completes the
// producers waiting on it.
//
// Pipeline: Append adds a batch to the open file; sealing moves it to a
// FIFO; the run goroutine lays the file out (batches grouped by partition,
// in arrival order within a partition), starts its upload (at most
// MaxConcurrentUploads at once) and hands it to the commit goroutine, which
// commits files strictly in seal order, so one producer's batches to one
// partition keep their order even though uploads overlap.
//
// Consecutive batches of a partition without idempotence are committed as
// one run: one metadata row covering several Kafka batches. A file of
// thousands of small batches over a few partitions thus costs a few rows,
// and the commit's cost follows the partitions a file touches, not its
// batch count.
package batcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/semaphore"

	"github.com/floe-broker/floe/kbatch"
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
	Key  string
	Data []byte
	// Commits are the runs committed (one per metadata row) and Results
	// their outcomes, in the same order.
	Commits []metadata.BatchCommit
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

	mu     sync.Mutex // protects cur, queue, closed
	cur    *file
	queue  []*file // sealed, not yet started
	closed bool

	wake     chan struct{} // poked when queue grows or on close
	commitQ  chan *file
	runDone  chan struct{}
	commDone chan struct{}
	upWG     sync.WaitGroup // upload goroutines
}

type waiter struct {
	size    int64
	batch   []byte // until the file is laid out
	records int32
	idem    bool // carries a producer id and sequence
	res     metadata.BatchResult
	err     error
	done    chan struct{}
}

// partBatches are one partition's batches in a file, in arrival order.
type partBatches struct {
	topicID   int64
	partition int32
	waiters   []*waiter
}

type file struct {
	parts    map[[2]int64]*partBatches
	waiters  []*waiter // every batch, in arrival order
	body     int       // bytes of batches so far
	timer    *time.Timer
	sealedAt time.Time
	key      string
	data     []byte
	commits  []metadata.BatchCommit
	runs     [][]*waiter // the batches of each commit
	uploaded chan error
}

// fileSize is the size the file will have with one more batch of n bytes.
func (f *file) fileSize(n int) int {
	return logfile.HeaderSize + f.body + n + 4 + (len(f.waiters)+1)*logfile.EntrySize + logfile.TrailerSize
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

// Append adds the batch to the open file and returns at once; batches of a
// partition appended in sequence get offsets in that order. It blocks only
// while the buffer is full (backpressure), until ctx ends. The batcher
// keeps batch until the file is written: the caller must not modify it.
func (b *Batcher) Append(ctx context.Context, topicID int64, partition int32, batch []byte) (*Pending, error) {
	n := int64(len(batch))
	if len(batch)+logfile.MinFileSize+logfile.EntrySize > b.cfg.MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(batch), b.cfg.MaxFileBytes)
	}
	if partition < 0 {
		return nil, fmt.Errorf("batcher: append batch: negative partition %d", partition)
	}
	// Validate outside the lock (CRC over the whole batch).
	info, err := kbatch.ParseInfo(batch)
	if err != nil {
		return nil, fmt.Errorf("batcher: append batch: %w", err)
	}
	if info.BatchLength != len(batch) {
		return nil, fmt.Errorf("batcher: append batch: %w: %d bytes after the batch", kbatch.ErrCorrupt, len(batch)-info.BatchLength)
	}
	if !b.mem.TryAcquire(n) {
		b.m.backpressure()
		if err := b.mem.Acquire(ctx, n); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBackpressure, err)
		}
	}
	b.m.buffered(n)
	w := &waiter{size: n, batch: batch, records: info.RecordCount, done: make(chan struct{}),
		idem: info.ProducerID >= 0 && info.BaseSequence >= 0}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.release(n)
		return nil, ErrClosed
	}
	if b.cur != nil && b.cur.fileSize(len(batch)) > b.cfg.MaxFileBytes {
		b.sealLocked()
	}
	if b.cur == nil {
		f := &file{parts: make(map[[2]int64]*partBatches)}
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
	f := b.cur
	k := [2]int64{topicID, int64(partition)}
	pb := f.parts[k]
	if pb == nil {
		pb = &partBatches{topicID: topicID, partition: partition}
		f.parts[k] = pb
	}
	pb.waiters = append(pb.waiters, w)
	f.waiters = append(f.waiters, w)
	f.body += len(batch)
	if b.cfg.Linger == 0 || f.fileSize(0) >= b.cfg.MaxFileBytes {
		b.sealLocked()
	}
	b.mu.Unlock()
	return &Pending{w: w}, nil
}

// sealLocked closes the open file and queues it for upload. b.mu is held.
func (b *Batcher) sealLocked() {
	f := b.cur
	if f == nil {
		return
	}
	b.cur = nil
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
			b.layout(f)
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
	if len(f.commits) == 0 {
		return // every batch failed at layout
	}
	fc := metadata.FileCommit{Key: f.key, Size: int64(len(f.data)), Batches: f.commits}
	start := time.Now()
	cctx, cancel := context.WithTimeout(b.ctx, b.cfg.CommitTimeout)
	results, err := b.committer.CommitFile(cctx, fc)
	cancel()
	b.m.commit(time.Since(start), err)
	if err == nil && len(results) != len(f.commits) {
		err = fmt.Errorf("batcher: commit returned %d results for %d runs", len(results), len(f.commits))
	}
	if err != nil {
		b.log.Warn("file commit failed", "key", f.key, "runs", len(f.commits), "err", err)
		b.failAll(f, &FlushError{Stage: "commit", Ambiguous: !isDefiniteRefusal(err), Err: err})
		return
	}
	b.m.flush(len(f.data), len(f.waiters), len(f.parts), time.Since(f.sealedAt))
	for i, run := range f.runs {
		res := results[i]
		next := res.BaseOffset
		for _, w := range run {
			w.res = res
			w.res.BaseOffset = next
			w.err = res.Err
			next += int64(w.records)
		}
	}
	if b.opts.OnCommit != nil {
		b.opts.OnCommit(CommittedFile{Key: f.key, Data: f.data, Commits: f.commits, Results: results})
	}
}

func (b *Batcher) failAll(f *file, err error) {
	for _, w := range f.waiters {
		if w.err == nil {
			w.err = err
		}
	}
}

// layout writes the sealed file: partitions in (topic, partition) order,
// each partition's batches in arrival order, and the commit runs: the
// consecutive batches of a partition without idempotence form one run; an
// idempotent batch is a run of its own (its sequence is checked alone).
func (b *Batcher) layout(f *file) {
	parts := make([]*partBatches, 0, len(f.parts))
	for _, pb := range f.parts {
		parts = append(parts, pb)
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topicID != parts[j].topicID {
			return parts[i].topicID < parts[j].topicID
		}
		return parts[i].partition < parts[j].partition
	})
	w := logfile.NewWriter(f.fileSize(0))
	for _, pb := range parts {
		open := -1 // index in f.commits of the partition's open run
		for _, wt := range pb.waiters {
			e, err := w.Append(pb.topicID, pb.partition, wt.batch)
			wt.batch = nil
			if err != nil {
				wt.err = fmt.Errorf("batcher: lay out batch: %w", err)
				continue
			}
			if !wt.idem && open >= 0 {
				c := &f.commits[open]
				c.ByteLength += e.ByteLength
				c.RecordCount += e.RecordCount
				c.MaxTimestamp = max(c.MaxTimestamp, e.MaxTimestamp)
				f.runs[open] = append(f.runs[open], wt)
				continue
			}
			f.commits = append(f.commits, metadata.BatchCommit{
				TopicID: e.TopicID, Partition: e.Partition,
				ByteOffset: e.ByteOffset, ByteLength: e.ByteLength,
				RecordCount: e.RecordCount, MaxTimestamp: e.MaxTimestamp,
				ProducerID: e.ProducerID, ProducerEpoch: e.ProducerEpoch, BaseSequence: e.BaseSequence,
			})
			f.runs = append(f.runs, []*waiter{wt})
			open = -1
			if !wt.idem {
				f.commits[len(f.commits)-1].ProducerID = -1
				f.commits[len(f.commits)-1].BaseSequence = metadata.NoSequence
				open = len(f.commits) - 1
			}
		}
	}
	f.data = w.Finish()
}

// isDefiniteRefusal reports errors after which the commit surely did not happen.
func isDefiniteRefusal(err error) bool {
	return errors.Is(err, metadata.ErrInvalidCommit) || errors.Is(err, metadata.ErrClosed)
}
