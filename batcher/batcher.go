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
//
// A file's buffer is reused for a later file once nothing reads it: its
// upload has returned and the OnCommit hook has called
// CommittedFile.Release (bufpool.go).
//
// Failures: a file has one upload deadline and one commit deadline
// (Config). An upload that fails or misses its deadline fails the file's
// producers definitely; the file is never committed, and the files after
// it go on. A commit error the metadata store marks as not applied
// (metadata.NotApplied) fails the producers definitely, at once; any other
// leaves the outcome unknown, so the same FileCommit (same key) is retried
// until the commit deadline: CommitFile is idempotent by key, and a retry
// after a commit that landed answers with its results, which each producer
// then gets once. Only if the outcome is still unknown at the deadline do
// the producers get a FlushError with Ambiguous set. A producer that stops
// waiting before its file's commit started has its batch withdrawn from
// the commit (Pending.Wait). Each failed file is logged once at ERROR.
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
	// Release, called once nothing reads Data any more (the hook, and
	// whatever it handed Data to), lets the batcher reuse its buffer for a
	// later file. Calling it while Data is still read corrupts those
	// reads; never calling it is always safe (the garbage collector takes
	// the buffer). Calls after the first do nothing.
	Release func()
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
	bufs    *bufPool            // file buffers nobody reads (bufpool.go)

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

// waitState is where a batch stands between its producer and its file.
type waitState int

const (
	statePending    waitState = iota // not yet in a commit: may be withdrawn
	stateWithdrawn                   // its producer stopped waiting first: never committed
	stateCommitting                  // part of a commit in flight
	stateAnswered                    // res and err are final
)

type waiter struct {
	size    int64
	batch   []byte      // until the file is laid out
	info    kbatch.Info // batch's header, checked once by Append
	records int32
	idem    bool                 // carries a producer id and sequence
	entry   metadata.BatchCommit // its place in the file, once laid out
	done    chan struct{}        // closed once the file is finished

	mu    sync.Mutex // protects state, res and err
	state waitState
	res   metadata.BatchResult
	err   error
}

// answer sets the batch's outcome unless its producer withdrew it.
func (w *waiter) answer(res metadata.BatchResult, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != stateWithdrawn {
		w.state, w.res, w.err = stateAnswered, res, err
	}
}

// freeze moves a pending batch into its file's commit and reports whether
// it is in (false: withdrawn or already answered).
func (w *waiter) freeze() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == statePending {
		w.state = stateCommitting
		return true
	}
	return false
}

// partBatches are one partition's batches in a file, in arrival order.
type partBatches struct {
	topicID   int64
	partition int32
	waiters   []*waiter
}

// uploadResult is how a file's upload ended.
type uploadResult struct {
	err error
	at  time.Time
}

type file struct {
	parts    map[[2]int64]*partBatches
	waiters  []*waiter // every batch, in arrival order
	body     int       // bytes of batches so far
	timer    *time.Timer
	sealedAt time.Time
	key      string
	data     []byte
	order    []*waiter // the batches laid out, in file order
	uploaded chan uploadResult
	buf      *bufRef // data's holders: its upload and its commit path
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
		bufs:     newBufPool(cfg.MaxConcurrentUploads+2, 2*cfg.MaxFileBytes),
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

// Wait blocks until the batch's file is committed or failed, or ctx ends.
// Every error it returns says whether the batch may be committed:
//
//   - ctx ended before the file's commit started: the batch is withdrawn,
//     never to be committed, and Wait returns a *FlushError (StageWithdraw,
//     not Ambiguous) wrapping ErrWithdrawn and ctx's error;
//   - ctx ended while the commit was in flight: a *FlushError (StageCommit)
//     with Ambiguous set;
//   - otherwise the file's outcome: a *FlushError for a failed upload or
//     commit, a per-batch refusal from the metadata store, or nil.
func (p *Pending) Wait(ctx context.Context) (metadata.BatchResult, error) {
	w := p.w
	select {
	case <-w.done:
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		switch w.state {
		case statePending:
			w.state = stateWithdrawn
			w.err = &FlushError{Stage: StageWithdraw, Err: fmt.Errorf("%w: %w", ErrWithdrawn, ctx.Err())}
		case stateCommitting:
			return metadata.BatchResult{}, &FlushError{Stage: StageCommit, Ambiguous: true,
				Err: fmt.Errorf("batcher: stopped waiting during the commit: %w", ctx.Err())}
		}
		return w.res, w.err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res, w.err
}

// Append adds the batch to the open file and returns at once; batches of a
// partition appended in sequence get offsets in that order. It blocks only
// while the buffer is full (backpressure), until ctx ends. The batcher
// keeps batch until the file is written: the caller must not modify it.
//
// Append validates the batch (kbatch.ParseInfo: header, CRC, record
// count); it is the one check of a batch the agent encoded itself. A
// caller that has checked the batch at its edge passes what ParseInfo
// returned to AppendParsed instead.
func (b *Batcher) Append(ctx context.Context, topicID int64, partition int32, batch []byte) (*Pending, error) {
	if err := b.checkSize(batch, partition); err != nil {
		return nil, err
	}
	// Validate outside the lock (CRC over the whole batch).
	info, err := kbatch.ParseInfo(batch)
	if err != nil {
		return nil, fmt.Errorf("batcher: append batch: %w", err)
	}
	return b.AppendParsed(ctx, topicID, partition, batch, info)
}

// AppendParsed is Append for a batch already validated: info must be what
// kbatch.ParseInfo returned for these very bytes, unchanged since. Its
// CRC is not computed again, here or when the file is laid out.
func (b *Batcher) AppendParsed(ctx context.Context, topicID int64, partition int32, batch []byte, info kbatch.Info) (*Pending, error) {
	if err := b.checkSize(batch, partition); err != nil {
		return nil, err
	}
	if info.BatchLength != len(batch) {
		return nil, fmt.Errorf("batcher: append batch: %w: %d bytes after the batch", kbatch.ErrCorrupt, len(batch)-info.BatchLength)
	}
	n := int64(len(batch))
	if !b.mem.TryAcquire(n) {
		b.m.backpressure()
		if err := b.mem.Acquire(ctx, n); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBackpressure, err)
		}
	}
	b.m.buffered(n)
	w := &waiter{size: n, batch: batch, info: info, records: info.RecordCount, done: make(chan struct{}),
		idem: info.ProducerID >= 0 && info.BaseSequence >= 0}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.release(n)
		return nil, ErrClosed
	}
	if b.cur != nil && b.cur.fileSize(len(batch)) > b.cfg.MaxFileBytes {
		b.sealLocked(SealSize)
	}
	if b.cur == nil {
		f := &file{parts: make(map[[2]int64]*partBatches)}
		if b.cfg.Linger > 0 {
			f.timer = time.AfterFunc(b.cfg.Linger, func() {
				b.mu.Lock()
				defer b.mu.Unlock()
				if b.cur == f {
					b.sealLocked(SealLinger)
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
	switch {
	case f.fileSize(0) >= b.cfg.MaxFileBytes:
		b.sealLocked(SealSize)
	case b.cfg.Linger == 0:
		b.sealLocked(SealLinger)
	}
	b.mu.Unlock()
	return &Pending{w: w}, nil
}

// checkSize refuses a batch no file can hold and a negative partition.
func (b *Batcher) checkSize(batch []byte, partition int32) error {
	if len(batch)+logfile.MinFileSize+logfile.EntrySize > b.cfg.MaxFileBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(batch), b.cfg.MaxFileBytes)
	}
	if partition < 0 {
		return fmt.Errorf("batcher: append batch: negative partition %d", partition)
	}
	return nil
}

// Why a file is sealed (floe_batcher_seals_total's reason label).
const (
	SealLinger = "linger" // its linger passed
	SealSize   = "size"   // it reached MaxFileBytes (or the next batch would pass it)
	SealFlush  = "flush"  // Flush
	SealClose  = "close"  // Close
)

// sealLocked closes the open file and queues it for upload. b.mu is held.
func (b *Batcher) sealLocked(reason string) {
	f := b.cur
	if f == nil {
		return
	}
	b.m.seal(reason)
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
	b.sealLocked(SealFlush)
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
	b.sealLocked(SealClose)
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

// run lays out sealed files, starts their uploads in seal order (each
// within its upload deadline) and feeds the commit goroutine.
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
			b.layout(f)
			f.key = newKey()
			f.uploaded = make(chan uploadResult, 1)
			ctx, cancel := context.WithDeadline(b.ctx, f.sealedAt.Add(b.cfg.UploadTimeout))
			select {
			case b.uploads <- struct{}{}:
				b.upWG.Add(1)
				f.buf.hold() // the upload's, let go when Put returns
				go b.upload(ctx, cancel, f)
			case <-ctx.Done():
				cancel()
				f.uploaded <- uploadResult{err: b.uploadErr(ctx, fmt.Errorf("batcher: wait for an upload slot: %w", ctx.Err())), at: time.Now()}
			}
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

// newKey names a file: unique (a ULID), spread over 256 key prefixes.
func newKey() string {
	id := ulid.Make()
	return fmt.Sprintf("v1/files/%02x/%s", id[15], id.String())
}

// uploadErr says why an upload failed when its context ended.
func (b *Batcher) uploadErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && b.ctx.Err() == nil {
		return fmt.Errorf("batcher: upload deadline (%v) passed: %w", b.cfg.UploadTimeout, err)
	}
	return err
}

// upload PUTs one file once, within ctx (its upload deadline). The store
// retries inside that deadline (s3store: the SDK's retries, an if-absent
// PUT whose answer was lost recognised as ours); the batcher adds no retry
// loop of its own.
func (b *Batcher) upload(ctx context.Context, cancel context.CancelFunc, f *file) {
	defer b.upWG.Done()
	defer func() { <-b.uploads }()
	defer cancel()
	start := time.Now()
	err := b.store.Put(ctx, f.key, f.data, objectstore.PutOptions{IfAbsent: true})
	f.buf.release() // the store no longer reads it, whatever the outcome
	if err != nil && ctx.Err() != nil {
		err = b.uploadErr(ctx, err)
	}
	b.m.upload(time.Since(start), len(f.data), err)
	f.uploaded <- uploadResult{err: err, at: time.Now()}
}

// commitLoop commits uploaded files in seal order and answers producers.
func (b *Batcher) commitLoop() {
	defer close(b.commDone)
	for f := range b.commitQ {
		b.finish(f)
	}
}

// finish waits for the file's upload, commits it and answers its producers.
func (b *Batcher) finish(f *file) {
	handed := false // the commit path's hold on f's buffer went to OnCommit
	defer func() {
		if !handed {
			f.buf.release()
		}
		for _, w := range f.waiters {
			b.release(w.size)
			close(w.done)
		}
	}()
	up := b.awaitUpload(f)
	if up.err != nil {
		b.log.Error("file upload failed", "key", f.key, "batches", len(f.waiters), "err", up.err)
		b.failAll(f, &FlushError{Stage: StageUpload, Err: up.err})
		return
	}
	deadline := up.at.Add(b.cfg.CommitTimeout)
	if !time.Now().Before(deadline) {
		// The files before it took the whole deadline: nothing was sent.
		err := fmt.Errorf("batcher: commit deadline (%v) passed before the commit started", b.cfg.CommitTimeout)
		b.log.Error("file commit failed", "key", f.key, "batches", len(f.waiters), "err", err)
		b.failAll(f, &FlushError{Stage: StageCommit, Err: err})
		return
	}
	commits, runs := buildCommits(f.order)
	if len(commits) == 0 {
		b.log.Debug("file not committed: every batch withdrawn or refused", "key", f.key)
		return
	}
	fc := metadata.FileCommit{Key: f.key, Size: int64(len(f.data)), Batches: commits}
	results, ambiguous, err := b.commit(fc, deadline)
	if err != nil {
		b.log.Error("file commit failed", "key", f.key, "runs", len(commits), "outcome_unknown", ambiguous, "err", err)
		b.failAll(f, &FlushError{Stage: StageCommit, Ambiguous: ambiguous, Err: err})
		return
	}
	b.m.flush(len(f.data), len(f.waiters), len(f.parts), time.Since(f.sealedAt))
	for i, run := range runs {
		res := results[i]
		next := res.BaseOffset
		for _, w := range run {
			wr := res
			wr.BaseOffset = next
			w.answer(wr, res.Err)
			next += int64(w.records)
		}
	}
	if b.opts.OnCommit != nil {
		handed = true
		b.opts.OnCommit(CommittedFile{Key: f.key, Data: f.data, Commits: commits, Results: results, Release: f.buf.releaseOnce()})
	}
}

// awaitUpload waits for the file's upload until its deadline, even if the
// store does not honour its context: past the deadline the file has failed
// and will never be committed, whenever its PUT returns.
func (b *Batcher) awaitUpload(f *file) uploadResult {
	t := time.NewTimer(time.Until(f.sealedAt.Add(b.cfg.UploadTimeout)))
	defer t.Stop()
	select {
	case up := <-f.uploaded:
		return up
	case <-t.C:
	}
	select {
	case up := <-f.uploaded: // it ended with the deadline
		return up
	default:
		return uploadResult{err: fmt.Errorf("batcher: upload deadline (%v) passed: the store had not returned", b.cfg.UploadTimeout), at: time.Now()}
	}
}

// Commit retry pacing: the first pause, its cap, and the share of the
// commit deadline one attempt may use (so a hung connection leaves time
// for a retry on another).
const (
	commitBackoff    = 10 * time.Millisecond
	commitMaxBackoff = 500 * time.Millisecond
	commitAttemptDiv = 2
)

// commit commits fc, retrying the same FileCommit (CommitFile is
// idempotent by key: a retry after a landed commit answers with its
// results) while the outcome is unknown, until deadline. It returns
// whether an error leaves the outcome unknown: false when every attempt
// surely did nothing (metadata.NotApplied), which is answered at once.
func (b *Batcher) commit(fc metadata.FileCommit, deadline time.Time) (_ []metadata.BatchResult, ambiguous bool, _ error) {
	ctx, cancel := context.WithDeadline(b.ctx, deadline)
	defer cancel()
	pause := commitBackoff
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, b.cfg.CommitTimeout/commitAttemptDiv)
		start := time.Now()
		results, err := b.committer.CommitFile(actx, fc)
		acancel()
		b.m.commit(time.Since(start), err)
		if err == nil {
			if len(results) != len(fc.Batches) {
				// Committed, but the answer cannot be mapped to the batches.
				return nil, true, fmt.Errorf("batcher: commit returned %d results for %d runs", len(results), len(fc.Batches))
			}
			return results, false, nil
		}
		definite := metadata.NotApplied(err)
		ambiguous = ambiguous || !definite
		b.log.Debug("file commit attempt failed", "key", fc.Key, "attempt", attempt, "outcome_unknown", !definite, "err", err)
		if !ambiguous || errors.Is(err, metadata.ErrInvalidCommit) || errors.Is(err, metadata.ErrClosed) {
			return nil, ambiguous, fmt.Errorf("batcher: commit: %w", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			if b.ctx.Err() == nil {
				return nil, true, fmt.Errorf("batcher: commit deadline (%v) passed after %d attempts: %w", b.cfg.CommitTimeout, attempt, err)
			}
			return nil, true, fmt.Errorf("batcher: commit aborted by close after %d attempts: %w", attempt, err)
		}
		pause = min(2*pause, commitMaxBackoff)
	}
}

// failAll answers every batch of f still unanswered with err.
func (b *Batcher) failAll(f *file, err error) {
	for _, w := range f.waiters {
		w.mu.Lock()
		if w.state == statePending || w.state == stateCommitting {
			w.state, w.err = stateAnswered, err
		}
		w.mu.Unlock()
	}
}

// layout writes the sealed file: partitions in (topic, partition) order,
// each partition's batches in arrival order.
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
	size := f.fileSize(0)
	buf := b.bufs.get(size)
	if buf == nil {
		buf = make([]byte, 0, size)
	}
	w := logfile.NewWriterBuffer(buf)
	f.order = make([]*waiter, 0, len(f.waiters))
	for _, pb := range parts {
		for _, wt := range pb.waiters {
			e, err := w.AppendParsed(pb.topicID, pb.partition, wt.batch, wt.info)
			wt.batch = nil
			if err != nil {
				wt.answer(metadata.BatchResult{}, fmt.Errorf("batcher: lay out batch: %w", err))
				continue
			}
			wt.entry = metadata.BatchCommit{
				TopicID: e.TopicID, Partition: e.Partition,
				ByteOffset: e.ByteOffset, ByteLength: e.ByteLength,
				RecordCount: e.RecordCount, MaxTimestamp: e.MaxTimestamp,
				ProducerID: e.ProducerID, ProducerEpoch: e.ProducerEpoch, BaseSequence: e.BaseSequence,
			}
			if !wt.idem {
				wt.entry.ProducerID, wt.entry.BaseSequence = -1, metadata.NoSequence
			}
			f.order = append(f.order, wt)
		}
	}
	f.data = w.Finish()
	// One holder: the commit path (the upload adds its own when it starts).
	f.buf = &bufRef{pool: b.bufs, buf: f.data}
	f.buf.hold()
}

// buildCommits moves the file's pending batches into its commit (batches
// withdrawn before are left out) and groups them into runs, one metadata
// row each: consecutive batches of a partition without idempotence that
// are adjacent in the file form one run; an idempotent batch is a run of
// its own (its sequence is checked alone). A withdrawn batch between two
// others splits their run, so no run covers its bytes.
func buildCommits(order []*waiter) (commits []metadata.BatchCommit, runs [][]*waiter) {
	open := false // the last run may take more batches
	for _, w := range order {
		if !w.freeze() {
			open = false
			continue
		}
		e := w.entry
		if n := len(commits); open && !w.idem {
			c := &commits[n-1]
			if c.TopicID == e.TopicID && c.Partition == e.Partition && c.ByteOffset+c.ByteLength == e.ByteOffset {
				c.ByteLength += e.ByteLength
				c.RecordCount += e.RecordCount
				c.MaxTimestamp = max(c.MaxTimestamp, e.MaxTimestamp)
				runs[n-1] = append(runs[n-1], w)
				continue
			}
		}
		commits = append(commits, e)
		runs = append(runs, []*waiter{w})
		open = !w.idem
	}
	return commits, runs
}
