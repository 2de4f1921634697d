package readpath

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/logfile"
)

// errLoadBusy refuses a read whose bytes did not fit in MaxLoadingBytes
// within MaxLoadWait; it reaches the client as ResourceExhausted.
var errLoadBusy = errors.New("agent: read memory busy")

// Loader reads from the object store on cache misses. The bytes being
// read at once, across all requests, are bounded by a weighted semaphore:
// a read waits for room up to MaxLoadWait (and its caller's context), then
// is refused with ResourceExhausted. A whole-file load is shared by every
// reader of the file and runs in a goroutine of its own, cancelled as soon
// as its last reader has left.
type Loader struct {
	store   ObjectReader
	cache   *Cache
	mem     *semaphore.Weighted
	max     int64
	wait    time.Duration // MaxLoadWait
	timeout time.Duration // LoadTimeout

	mu         sync.Mutex // protects loads and the waiters of each load
	loads      map[string]*load
	prefetches int            // loads started by prefetch and running
	wg         sync.WaitGroup // load goroutines

	ra *Readahead // read-ahead for readers far behind (nil: off)
}

// load is one whole-file read in progress. data and err are set before
// done is closed.
type load struct {
	done     chan struct{}
	data     []byte
	err      error
	waiters  int // readers waiting; guarded by loader.mu
	cancel   context.CancelFunc
	prefetch bool // started by the read-ahead (counted in loader.prefetches)
}

// NewLoader returns a loader into cache, with its read-ahead when
// cfg.ReadaheadBytes is positive.
func NewLoader(store ObjectReader, cache *Cache, cfg Config) *Loader {
	l := &Loader{
		store: store, cache: cache,
		mem: semaphore.NewWeighted(cfg.MaxLoadingBytes), max: cfg.MaxLoadingBytes,
		wait: cfg.MaxLoadWait, timeout: cfg.LoadTimeout,
		loads: make(map[string]*load),
	}
	l.ra = newReadahead(l, cfg)
	return l
}

// File returns the whole file, from the cache or by joining (or starting)
// its load, and caches it. size is the file's size from the metadata.
// verified reports that the file's checksums held when it was read (a load
// checks them; a cached file tells, see Cache.AddVerified).
func (l *Loader) File(ctx context.Context, key string, size int64) (data []byte, verified bool, err error) {
	if d, v, ok := l.cache.GetVerified(key); ok {
		return d, v, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	l.mu.Lock()
	ld, ok := l.loads[key]
	if !ok {
		lctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		ld = &load{done: make(chan struct{}), cancel: cancel}
		l.loads[key] = ld
		l.wg.Add(1)
		go l.run(lctx, key, size, ld)
	}
	ld.waiters++
	l.mu.Unlock()
	select {
	case <-ld.done:
		l.leave(key, ld)
		if errors.Is(ld.err, errPrefetchSkipped) {
			// The read-ahead gave way to other reads: load it for this
			// reader (its own load waits for room like any other).
			return l.File(ctx, key, size)
		}
		return ld.data, ld.err == nil, ld.err
	case <-ctx.Done():
		l.leave(key, ld)
		return nil, false, ctx.Err()
	}
}

// prefetch starts a whole-file load of key into the cache, shared with the
// readers that come for it, unless the file is cached or loading (true) or
// readaheadLoads prefetches already run (false).
func (l *Loader) prefetch(key string, size int64) bool {
	if l.cache.Has(key) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.loads[key]; ok {
		return true
	}
	if l.prefetches >= readaheadLoads {
		return false
	}
	l.prefetches++
	lctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	ld := &load{done: make(chan struct{}), cancel: cancel, prefetch: true}
	l.loads[key] = ld
	l.wg.Add(1)
	go l.run(lctx, key, size, ld)
	return true
}

// Loading reports whether a whole-file load of key runs.
func (l *Loader) Loading(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.loads[key]
	return ok
}

// leave drops a reader of ld; the last one to leave an unfinished load
// cancels it (a reader arriving later starts a new one).
func (l *Loader) leave(key string, ld *load) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ld.waiters--
	if ld.waiters > 0 {
		return
	}
	if l.loads[key] == ld {
		delete(l.loads, key)
	}
	ld.cancel()
}

// run performs a whole-file load within the memory bound and caches the
// file once its checksums hold (logfile.ReadIndex checks the trailer,
// footer and body CRC-32C); a file failing them is data loss, not cached.
func (l *Loader) run(ctx context.Context, key string, size int64, ld *load) {
	defer l.wg.Done()
	defer ld.cancel()
	var (
		data []byte
		err  error
	)
	if ld.prefetch {
		data, err = l.tryGet(ctx, key, size)
	} else {
		data, err = l.get(ctx, key, 0, readLength(size), size)
	}
	if err == nil && size > 0 && int64(len(data)) != size {
		// Never more than size+1 bytes are read: an object longer than
		// the metadata records is not read to its end.
		data, err = nil, &DataLossError{fmt.Errorf("agent: file %s is not the %d bytes the metadata records (%d or more read)", key, size, len(data))}
	}
	if err == nil {
		if _, cerr := logfile.ReadIndex(data); cerr != nil {
			data, err = nil, &DataLossError{fmt.Errorf("agent: file %s fails its checks: %w", key, cerr)}
		}
	}
	if err == nil {
		l.cache.AddVerified(key, data)
	}
	l.mu.Lock()
	if l.loads[key] == ld {
		delete(l.loads, key)
	}
	if ld.prefetch {
		l.prefetches--
	}
	ld.data, ld.err = data, err
	close(ld.done)
	l.mu.Unlock()
	if ld.prefetch && l.ra != nil {
		l.ra.kick() // a prefetch slot is free
	}
}

// get reads [off, off+length) of key (length < 0: to the end; size is then
// the expected length) once size bytes fit in the bound.
func (l *Loader) get(ctx context.Context, key string, off, length, size int64) ([]byte, error) {
	w := min(max(size, 1), l.max)
	wctx, cancel := context.WithTimeout(ctx, l.wait)
	err := l.mem.Acquire(wctx, w)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, status.Error(codes.ResourceExhausted, fmt.Sprintf("%v: %d bytes could not be read within %v (at most %d bytes are read at once); retry later",
			errLoadBusy, size, l.wait, l.max))
	}
	defer l.mem.Release(w)
	return l.store.Get(ctx, key, off, length)
}

// errPrefetchSkipped ends a read-ahead load that found no room in the
// loading bound: speculation never queues ahead of a reader's load.
var errPrefetchSkipped = errors.New("agent: read-ahead load skipped: the loading bound is in use")

// tryGet is get for a read-ahead load: it takes room in the bound only if
// there is some now and nobody waits for it (the semaphore is FIFO, so a
// prefetch waiting for 16 MiB would hold up every smaller read behind it,
// and readers would get ResourceExhausted after MaxLoadWait).
func (l *Loader) tryGet(ctx context.Context, key string, size int64) ([]byte, error) {
	w := min(max(size, 1), l.max)
	if !l.mem.TryAcquire(w) {
		return nil, errPrefetchSkipped
	}
	defer l.mem.Release(w)
	return l.store.Get(ctx, key, 0, readLength(size))
}

// readLength is what a whole-file load reads of a file the metadata
// records as size bytes: one byte more, so that a longer object is told
// apart without being read whole (size <= 0, unknown: all of it).
func readLength(size int64) int64 {
	if size <= 0 {
		return -1
	}
	return size + 1
}

// Range reads a byte range of key within the memory bound, under ctx and
// within LoadTimeout (a hung store fails the read instead of holding it).
func (l *Loader) Range(ctx context.Context, key string, off, length int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	return l.get(ctx, key, off, length, length)
}

// Close stops the read-ahead and waits for the loads in progress (each
// ends within LoadTimeout, or at once when its readers have left).
func (l *Loader) Close() {
	if l.ra != nil {
		l.ra.close()
	}
	l.mu.Lock()
	for _, ld := range l.loads {
		if ld.prefetch && ld.waiters == 0 {
			ld.cancel() // nobody waits for it
		}
	}
	l.mu.Unlock()
	l.wg.Wait()
}
