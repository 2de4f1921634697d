// Package tableread serves a partition's offsets below its raw log start
// from the topic's Iceberg table: the Parquet files the compactor wrote
// (package iceberg), decoded from their column chunks (decode.go; a file
// of another layout through iceberg-go's scan) and rebuilt as Kafka v2
// record batches at their original offsets, with their timestamps, keys,
// values and headers. A topic opts in with retention.raw.ms
// (metadata.TableServes); the agent asks the Reader for the offsets the
// raw files no longer hold, and both front ends serve the batches as
// they serve stored ones.
//
// Which files: a scan of the table's current snapshot with the filter
// partition = P and FROM <= offset < TO; iceberg-go prunes data files by
// the manifests' column bounds (the writer keeps min/max of partition and
// offset) and the decoder row groups by their Parquet statistics, so a
// read touches the row groups holding the window, not the table. The window is sized
// from the byte budget and the table's bytes per row seen so far.
//
// Bounds: at most Config.MaxReads reads at once (each holds at most one
// window of rows decoded), rebuilt batches of at most MaxBatchBytes, and
// a response of about the caller's budget (one batch at least).
package tableread

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"hash/fnv"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
)

var (
	// ErrDataLoss marks table data that does not decode or does not hold
	// what the table's metadata says (a row of another partition or
	// outside the scanned window, an offset twice): never served.
	ErrDataLoss = errors.New("tableread: table data is corrupt")
	// ErrInvalidConfig refuses a Config; the message names the field.
	ErrInvalidConfig = errors.New("tableread: invalid config")
	// errNoTable: the topic has no table (yet): it holds nothing.
	errNoTable = errors.New("tableread: no table")
)

// Tables loads a topic's table (iceberg.Writer does).
type Tables interface {
	Load(ctx context.Context, topic string) (*table.Table, error)
}

// Config bounds the reader.
type Config struct {
	// MaxReads is how many table reads run at once; more wait.
	MaxReads int
	// TableTTL is how long a loaded table (its snapshot) serves reads
	// before it is loaded again. A superseded snapshot's files stay
	// readable for the compactor's -iceberg-orphan-age (24 h), far more.
	TableTTL time.Duration
	// MaxBatchBytes bounds one rebuilt batch (one record at least).
	MaxBatchBytes int
	// WindowBytes is about how many bytes of rows one scan reads (at
	// least a read's budget): the rows past the answer are kept for the
	// partition's next read (readahead.go). A read holds at most this
	// many bytes of rows decoded (and its row groups).
	WindowBytes int
	// ReadaheadBytes bounds the rows kept across all partitions (a scan
	// keeps at most three quarters of it), and as much again of the rows
	// of data files decoded whole (filecache.go); 0 keeps none.
	ReadaheadBytes int64
}

// DefaultConfig returns the defaults: 4 reads, 5 s, batches of 1 MiB,
// windows of 8 MiB, 64 MiB kept.
func DefaultConfig() Config {
	return Config{MaxReads: 4, TableTTL: 5 * time.Second, MaxBatchBytes: 1 << 20, WindowBytes: 8 << 20, ReadaheadBytes: 64 << 20}
}

func (c Config) validate() error {
	switch {
	case c.MaxReads <= 0:
		return fmt.Errorf("%w: MaxReads %d must be positive", ErrInvalidConfig, c.MaxReads)
	case c.TableTTL <= 0:
		return fmt.Errorf("%w: TableTTL %v must be positive", ErrInvalidConfig, c.TableTTL)
	case c.MaxBatchBytes <= 0:
		return fmt.Errorf("%w: MaxBatchBytes %d must be positive", ErrInvalidConfig, c.MaxBatchBytes)
	case c.WindowBytes < 0:
		return fmt.Errorf("%w: WindowBytes %d must not be negative", ErrInvalidConfig, c.WindowBytes)
	case c.ReadaheadBytes < 0:
		return fmt.Errorf("%w: ReadaheadBytes %d must not be negative", ErrInvalidConfig, c.ReadaheadBytes)
	}
	return nil
}

// Batch is one rebuilt Kafka v2 batch.
type Batch struct {
	Data       []byte // uncompressed, base offset set, CRC valid
	BaseOffset int64
	LastOffset int64 // the last record's offset
	Records    int32
	MaxTime    int64 // unix ms
}

// Reader reads tables. It is safe for concurrent use.
type Reader struct {
	tables Tables
	cfg    Config
	sem    chan struct{}
	ahead  *readahead
	files  *fileCache // decoded data files' rows (filecache.go)
	alloc  *allocPool // the Parquet decode's large buffers (alloc.go)
	plans  *plans     // snapshots' data files, planned once (plan.go)
	// footers are the data files' parsed footers (footers.go).
	footers *footers
	// batchBufs holds the buffers of rebuilt batches handed back
	// (ReadOwned).
	batchBufs *allocPool
	// stripes serialise the scans of one topic's table (by name hash).
	stripes [64]chan struct{}
	scans   atomic.Int64 // scans of tables made (tests)
	stats   scanStats    // what the scans read (tests)

	mu     sync.Mutex              // protects loaded
	loaded map[string]*loadedTable // topic -> its table as last loaded
}

// loadedTable is a table as loaded, and what reads learnt of it.
type loadedTable struct {
	tbl      *table.Table
	at       time.Time
	wm       iceberg.Watermark // the snapshot's watermark (wmKnown: it has one)
	wmKnown  bool
	earliest map[int32]int64 // per partition: the first offset the snapshot holds (-1: none)
	rowBytes atomic.Int64    // bytes per row seen by the last read (0: none yet)
}

// allocPoolBytes bounds the free decode buffers a reader keeps: half its
// read-ahead, within [8 MiB, 64 MiB]. A row group of 4 MiB of values
// has its data page, the values' builder and the filter's copy of them
// in buffers of the 8 MiB class, all freed at about the same time: a
// 16 MiB bound dropped 45% of the freed bytes in a 200 MB catch-up
// (each made afresh for the next row group), 32 MiB 0.1%.
func allocPoolBytes(readahead int64) int64 { return min(max(readahead/2, 8<<20), 64<<20) }

// Rebuilt batches' buffers handed back (Reader.ReadOwned) are kept for
// the next reads' batches up to batchPoolBytes: a catch-up rebuilds a
// buffer of about its fetch's bytes per read, and a fresh one costs its
// page faults on first touch (more than the copy into it). From 4 KiB
// (below that a fresh buffer is cheap) in power-of-two classes.
const (
	batchPoolBytes = 16 << 20
	batchPoolMin   = 4 << 10
)

func newBatchPool() *allocPool {
	p := newAllocPool(batchPoolBytes)
	p.min = batchPoolMin
	return p
}

// Poison makes r fill every buffer handed back to its pools (decode
// buffers, rebuilt batches' buffers) with garbage, so that a use after
// release reads garbage (tests). Call it before r is used.
func (r *Reader) Poison() { r.alloc.poison, r.batchBufs.poison = true, true }

// BatchBuffers is the bytes of free rebuilt batches' buffers r keeps and
// the buffers it handed out again (tests).
func (r *Reader) BatchBuffers() (held, reused int64) { return r.batchBufs.stats() }

// maxLoaded bounds the tables the reader remembers.
const maxLoaded = 1024

// New returns a reader of tables.
func New(tables Tables, cfg Config) (*Reader, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if tables == nil {
		return nil, fmt.Errorf("%w: no tables", ErrInvalidConfig)
	}
	r := &Reader{tables: tables, cfg: cfg, sem: make(chan struct{}, cfg.MaxReads), loaded: map[string]*loadedTable{},
		ahead: newReadahead(cfg.ReadaheadBytes, 30*time.Second), files: newFileCache(cfg.ReadaheadBytes),
		alloc: newAllocPool(allocPoolBytes(cfg.ReadaheadBytes)), batchBufs: newBatchPool(), plans: newPlans(planFiles), footers: newFooters()}
	for i := range r.stripes {
		r.stripes[i] = make(chan struct{}, 1)
	}
	return r, nil
}

// table returns topic's table, loaded at most TableTTL ago (fresh:
// loaded now); loaded says it was loaded by this call.
func (r *Reader) table(ctx context.Context, topic string, fresh bool) (lt *loadedTable, loaded bool, err error) {
	r.mu.Lock()
	lt, ok := r.loaded[topic]
	r.mu.Unlock()
	if ok && !fresh && time.Since(lt.at) < r.cfg.TableTTL {
		return lt, false, nil
	}
	tbl, err := r.tables.Load(ctx, topic)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, false, fmt.Errorf("%w: %w", errNoTable, err)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrUnavailable) {
		// The catalog did not answer (or not sensibly): a retry may;
		// never a statement about the data.
		return nil, false, fmt.Errorf("%w: load the table of %q: %w", ErrUnavailable, topic, err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("tableread: load the table of %q: %w", topic, err)
	}
	nt := &loadedTable{tbl: tbl, at: time.Now(), earliest: map[int32]int64{}}
	nt.wm, nt.wmKnown = tableWatermark(tbl)
	if ok && sameSnapshot(lt.tbl, tbl) {
		nt.earliest = lt.earliest
	}
	if ok {
		nt.rowBytes.Store(lt.rowBytes.Load())
	}
	r.mu.Lock()
	if len(r.loaded) >= maxLoaded {
		clear(r.loaded)
	}
	r.loaded[topic] = nt
	r.mu.Unlock()
	return nt, true, nil
}

// sameSnapshot reports whether a and b are at the same current snapshot.
func sameSnapshot(a, b *table.Table) bool {
	sa, sb := a.CurrentSnapshot(), b.CurrentSnapshot()
	return sa == nil && sb == nil || sa != nil && sb != nil && sa.SnapshotID == sb.SnapshotID
}

// stripeOf is topic's stripe.
func stripeOf(topic string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(topic))
	return int(h.Sum32() % 64)
}

// acquire takes one of the MaxReads read slots.
func (r *Reader) acquire(ctx context.Context) (func(), error) {
	select {
	case r.sem <- struct{}{}:
		return func() { <-r.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// retried runs fn on topic's table (fresh: loaded for this call), and
// once more on the table loaded afresh when it fails other than by ctx:
// a snapshot superseded since it was loaded may name files maintenance
// removed, or predate the raw log start (errStale). A second failure
// that is not the network's is ErrDataLoss.
func (r *Reader) retried(ctx context.Context, topic string, fn func(lt *loadedTable, fresh bool) error) error {
	var err error
	for attempt := range 2 {
		lt, loaded, lerr := r.table(ctx, topic, attempt > 0)
		if lerr != nil {
			return lerr
		}
		if err = fn(lt, loaded); err == nil || ctx.Err() != nil {
			return err
		}
	}
	var ne net.Error
	if errors.Is(err, ErrDataLoss) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrDataLoss, err)
}

// Read returns topic's partition's records from offset from, below end
// (the raw log start), rebuilt as batches in offset order: about
// maxBytes of them, one batch at least when the table holds any record
// in [from, end). It returns no batch when it holds none there (the
// caller reads the raw log from end).
func (r *Reader) Read(ctx context.Context, topic string, partition int32, from, end int64, maxBytes int) ([]Batch, error) {
	batches, _, err := r.ReadOwned(ctx, topic, partition, from, end, maxBytes)
	return batches, err // never handed back: the garbage collector's
}

// ReadOwned is Read whose batches' buffer may come from, and go back to,
// the reader's pool: free (never nil) hands it back, to be written over
// by later reads' batches. Call it at most once, when nothing reads the
// batches any more; a caller that never calls it leaves the buffer to
// the garbage collector, and the batches stay valid for good.
func (r *Reader) ReadOwned(ctx context.Context, topic string, partition int32, from, end int64, maxBytes int) (batches []Batch, free func(), err error) {
	batches, buf, err := r.read(ctx, topic, partition, from, end, maxBytes)
	if buf == nil {
		return batches, func() {}, err
	}
	return batches, func() { r.batchBufs.Free(buf) }, err
}

// read is Read, returning the pool's buffer its batches share (nil:
// none of the pool's).
func (r *Reader) read(ctx context.Context, topic string, partition int32, from, end int64, maxBytes int) ([]Batch, []byte, error) {
	if from >= end {
		return nil, nil, nil
	}
	key := aheadKey{topic, partition}
	rows, covered := r.ahead.take(key, from, end)
	if len(rows) > 0 {
		return rebuild(rows, r.cfg.MaxBatchBytes, maxBytes, r.batchBufs)
	}
	from = covered // the kept rows say nothing is in [from, covered)
	// One scan of a topic's table at a time: readers of its partitions
	// catching up together wait for the scan that reads their rows too.
	stripe := r.stripes[stripeOf(topic)]
	select {
	case stripe <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-stripe }()
	if rows, covered = r.ahead.take(key, from, end); len(rows) > 0 {
		return rebuild(rows, r.cfg.MaxBatchBytes, maxBytes, r.batchBufs)
	}
	from = covered
	if from >= end {
		return nil, nil, nil // kept rows of a snapshot that holds up to end: none there
	}
	release, err := r.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	err = r.retried(ctx, topic, func(lt *loadedTable, fresh bool) error {
		rows = nil
		// The snapshot speaks for the rows below its watermark only: the
		// scans (and the rows kept ahead) end there.
		upTo := speaksUpTo(lt.wm, lt.wmKnown, partition, end)
		window := windowOffsets(max(maxBytes, r.cfg.WindowBytes), int(lt.rowBytes.Load()))
		for lo := from; lo < upTo; window *= 2 {
			hi := min(upTo, lo+window)
			if hi < lo { // overflow
				hi = upTo
			}
			r.scans.Add(1)
			// The other partitions' rows that their read-ahead holds, or
			// would not take, are not decoded.
			floor := func(q int32) int64 { return r.ahead.floor(aheadKey{topic, q}, lo) }
			got, reach, others, err := scanRows(compute.WithAllocator(ctx, r.alloc), lt.tbl, r.plans, partition, lo, hi, upTo, scanBudget(r.cfg.ReadaheadBytes), int(lt.rowBytes.Load()), floor, r.files, r.footers, &r.stats)
			if err != nil {
				return err
			}
			for q, k := range others {
				if qhi := speaksUpTo(lt.wm, lt.wmKnown, q, k.hi); qhi > k.lo {
					r.ahead.putAhead(aheadKey{topic, q}, k.lo, qhi, k.rows)
				}
			}
			if len(got) > 0 {
				rows = got
				lt.learn(rows)
				r.ahead.put(key, lo, reach, rows)
				return nil
			}
			lo = reach
		}
		switch judgeEmpty(lt.wm[partition], lt.wmKnown, end, fresh) {
		case emptyStale:
			return fmt.Errorf("%w: partition %d at %d, its watermark %d, the raw log start %d", errStale, partition, from, lt.wm[partition], end)
		case emptyLost:
			return fmt.Errorf("%w: partition %d: the table holds offsets below %d only, the raw log starts at %d: [%d, %d) are in neither",
				ErrDataLoss, partition, lt.wm[partition], end, max(from, lt.wm[partition]), end)
		}
		return nil
	})
	if errors.Is(err, errNoTable) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return rebuild(rows, r.cfg.MaxBatchBytes, maxBytes, r.batchBufs)
}

// scanBudget is the bytes of rows one scan keeps of ReadaheadBytes:
// three quarters, the rest for what the partitions had kept and not yet
// read when the scan's rows extend it (readahead.putAhead).
func scanBudget(readahead int64) int64 { return readahead - readahead/4 }

// windowOffsets is how many offsets a read scans first: the budget over
// the bytes per row seen (1 KiB before any), at least 16.
func windowOffsets(maxBytes, rowBytes int) int64 {
	if rowBytes <= 0 {
		rowBytes = 1024
	}
	return max(16, int64(maxBytes/rowBytes)+1)
}

// learn records the bytes per row of rows: the next window's hint.
func (lt *loadedTable) learn(rows []row) {
	var n int
	for i := range rows {
		n += rows[i].size()
	}
	lt.rowBytes.Store(int64(max(1, n/len(rows))))
}

// Earliest returns the first offset topic's table holds of partition,
// and false when it holds none below end.
func (r *Reader) Earliest(ctx context.Context, topic string, partition int32, end int64) (int64, bool, error) {
	r.mu.Lock()
	lt, ok := r.loaded[topic]
	var first int64
	known := false
	if ok && time.Since(lt.at) < r.cfg.TableTTL {
		first, known = lt.earliest[partition]
	}
	r.mu.Unlock()
	if !known {
		release, err := r.acquire(ctx)
		if err != nil {
			return 0, false, err
		}
		err = r.retried(ctx, topic, func(lt *loadedTable, _ bool) error {
			var err error
			if first, err = firstOffset(ctx, lt.tbl, partition); err != nil {
				return err
			}
			r.mu.Lock()
			lt.earliest[partition] = first
			r.mu.Unlock()
			return nil
		})
		release()
		if errors.Is(err, errNoTable) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
	if first < 0 || first >= end {
		return 0, false, nil
	}
	return first, true, nil
}

// sortRows sorts rows by offset and checks them: all of partition, in
// [lo, hi), no offset twice.
func sortRows(rows []row, partition int32, lo, hi int64) error {
	byOffset := func(a, b row) int { return cmp.Compare(a.rec.Offset, b.rec.Offset) }
	if !slices.IsSortedFunc(rows, byOffset) { // a scan's rows mostly are
		slices.SortFunc(rows, byOffset)
	}
	for i := range rows {
		r := &rows[i]
		if r.part != partition || r.rec.Offset < lo || r.rec.Offset >= hi {
			return fmt.Errorf("%w: a read of partition %d [%d, %d) got a row of partition %d at offset %d", ErrDataLoss, partition, lo, hi, r.part, r.rec.Offset)
		}
		if i > 0 && rows[i-1].rec.Offset == r.rec.Offset {
			return fmt.Errorf("%w: partition %d offset %d twice", ErrDataLoss, partition, r.rec.Offset)
		}
	}
	return nil
}
