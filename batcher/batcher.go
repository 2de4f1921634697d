// Package batcher collects the record batches of every producer and
// partition of one agent into one object file, flushes it on linger or size
// with one PUT, commits it to the metadata store, and only then completes
// the producers waiting on it.
//
// Pipeline: Append adds a batch to the open file; sealing moves it to a
// FIFO; the run goroutine lays the file out (batches grouped by partition,
// in arrival order within a partition), starts its upload (at most
// MaxConcurrentUploads at once) and hands it to the commit goroutine, which
// commits files strictly in seal order, so one producer's batches to one
// partition keep their order even though uploads overlap. Every sealed,
// uploaded file that is waiting when a commit starts goes into that commit
// (in seal order, up to MaxFilesPerCommit; nextCommit decides): one
// metadata transaction (metadata.Store.CommitFiles) for all of them, so an
// agent whose seals come faster than its commits pays one round trip, and
// takes the partitions' locks once, for several files. The commit stops at
// the first file still uploading (the files after it wait for the next
// commit); a file whose upload failed is answered at once and holds no
// other back. Each file's producers are answered when its commit lands.
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
// (Config); files committed together share the earliest of their commit
// deadlines. An upload that fails or misses its deadline fails the file's
// producers definitely; the file is never committed, and the files after
// it go on. A commit error the metadata store marks as not applied
// (metadata.NotApplied: no file of the commit landed) fails the producers
// of its files definitely, at once; any other leaves the outcome unknown,
// so the same set of FileCommits (same keys) is retried until the commit
// deadline: CommitFiles is idempotent by every file key, and a retry after
// a commit that landed answers with each file's results, which each
// producer then gets once. Only if the outcome is still unknown at the
// deadline do the producers get a FlushError with Ambiguous set. A
// producer that stops waiting before its file's commit started has its
// batch withdrawn from the commit (Pending.Wait). Each failed file is
// logged once at ERROR.
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

// Committer assigns offsets to stored files' batches, several files in one
// transaction (metadata.Store).
type Committer interface {
	CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error)
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

	mu     sync.Mutex // protects cur, queue, closed, busy, ingest and every Writer's state
	cur    *file
	queue  []*file // sealed, not yet started
	closed bool
	busy   int          // Writers with a request in flight (writers.go)
	ingest ingestWindow // bytes appended per linger, recently

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
	lent    func()      // called once batch is no longer read (AppendParsedLent), or nil
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
	early    *time.Timer // sealWaited's minimum age passes (writers.go)
	openedAt time.Time
	sealedAt time.Time
	// waiting counts the Writers waiting on this file while it is open;
	// anonymous says it holds a batch of no Writer (writers.go).
	waiting   int
	anonymous bool
	key       string
	data      []byte
	crc       uint32    // data's CRC-32C (logfile.Writer.FileCRC), sent with its PUT
	order     []*waiter // the batches laid out, in file order
	uploaded  chan uploadResult
	up        *uploadResult          // the upload's outcome, once the commit goroutine knows it
	buf       *bufRef                // data's holders: its upload and its commit path
	commits   []metadata.BatchCommit // its runs, once its commit starts (buildCommits)
	runs      [][]*waiter
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
	b.bufs.m = b.m
	b.ingest.windowSize = cfg.Linger
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
	return b.appendParsed(ctx, topicID, partition, batch, info, nil)
}

// AppendParsedLent is AppendParsed for a batch that lies in a buffer its
// caller lends (a pooled gRPC receive buffer): the batcher calls done,
// once, as soon as it no longer reads batch — once the batch is copied
// into its file, when the file is laid out — and the caller may then reuse
// the buffer. done is called only when AppendParsedLent returns no error;
// on an error the batch was never taken and the buffer stays the caller's.
func (b *Batcher) AppendParsedLent(ctx context.Context, topicID int64, partition int32, batch []byte, info kbatch.Info, done func()) (*Pending, error) {
	return b.appendParsed(ctx, topicID, partition, batch, info, done)
}

func (b *Batcher) appendParsed(ctx context.Context, topicID int64, partition int32, batch []byte, info kbatch.Info, done func()) (*Pending, error) {
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
	w := &waiter{size: n, batch: batch, lent: done, info: info, records: info.RecordCount, done: make(chan struct{}),
		idem: info.ProducerID >= 0 && info.BaseSequence >= 0}

	wr := writerFrom(ctx)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.release(n)
		return nil, ErrClosed
	}
	b.ingest.add(time.Now(), n)
	if b.cur != nil && b.cur.fileSize(len(batch)) > b.cfg.MaxFileBytes {
		b.sealLocked(SealSize)
	}
	if b.cur == nil {
		f := &file{parts: make(map[[2]int64]*partBatches), openedAt: time.Now()}
		if b.cfg.Linger > 0 {
			b.armWaitedLocked(f)
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
	if wr != nil {
		wr.joinLocked(f)
	} else {
		f.anonymous = true
	}
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
	SealWaited = "waited" // every writer waits on it (writers.go)
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
	if f.early != nil {
		f.early.Stop()
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
	err := b.store.Put(ctx, f.key, f.data, objectstore.PutOptions{IfAbsent: true, CRC32C: f.crc, KnownCRC32C: true})
	f.buf.release() // the store no longer reads it, whatever the outcome
	if err != nil && ctx.Err() != nil {
		err = b.uploadErr(ctx, err)
	}
	d := time.Since(start)
	f.uploaded <- uploadResult{err: err, at: time.Now()}
	// Counted once the commit goroutine can see the outcome (tests wait
	// for the count to know that a file is ready to commit).
	b.m.upload(d, len(f.data), err)
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
	buf := b.bufs.get(size) // a pooled buffer that fits, or a new one
	w := logfile.NewWriterBuffer(buf)
	f.order = make([]*waiter, 0, len(f.waiters))
	for _, pb := range parts {
		for _, wt := range pb.waiters {
			e, err := w.AppendParsed(pb.topicID, pb.partition, wt.batch, wt.info)
			wt.batch = nil
			if wt.lent != nil {
				wt.lent() // copied (or refused): its lender may reuse the bytes
				wt.lent = nil
			}
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
	f.crc = w.FileCRC()
	// One holder: the commit path (the upload adds its own when it starts).
	f.buf = &bufRef{pool: b.bufs, buf: f.data}
	f.buf.hold()
}
