package readpath

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
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
	pool    *filePool // buffers of whole files, reused (bounded by MaxLoadingBytes)
	mem     *semaphore.Weighted
	max     int64
	wait    time.Duration // MaxLoadWait
	timeout time.Duration // LoadTimeout

	mu         sync.Mutex // protects loads and the waiters of each load
	loads      map[string]*load
	prefetches int            // loads started by prefetch and running
	wg         sync.WaitGroup // load goroutines

	ra *Readahead // read-ahead for readers far behind (nil: off)

	streamed atomic.Int64 // body bytes whose CRC-32C was hashed as they arrived (streamCRC)
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
	// buf is data's cache buffer when it came from the pool (nil: not
	// pooled, or failed), set before done is closed; the load holds it
	// until its last waiter has taken its own hold (bufHeld). Guarded by
	// loader.mu.
	buf     *Buf
	bufHeld bool
}

// NewLoader returns a loader into cache, with its read-ahead when
// cfg.ReadaheadBytes is positive.
func NewLoader(store ObjectReader, cache *Cache, cfg Config) *Loader {
	l := &Loader{
		store: store, cache: cache, pool: newFilePool(cfg.MaxLoadingBytes),
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
// checks them; a cached file tells, see Cache.AddVerified). The bytes are
// pinned (see Cache; a mapped file's are a copy): FileHeld is the read
// that holds them instead.
func (l *Loader) File(ctx context.Context, key string, size int64) (data []byte, verified bool, err error) {
	data, verified, b, err := l.FileHeld(ctx, key, size)
	if b != nil {
		data = b.PinnedBytes()
		b.Release()
	}
	return data, verified, err
}

// FileHeld is File that returns the file's cache buffer with a hold the
// caller must Release once it no longer reads data (nil: data is not a
// buffer the cache hands back; nothing to release).
func (l *Loader) FileHeld(ctx context.Context, key string, size int64) (data []byte, verified bool, b *Buf, err error) {
	if b, ok := l.cache.Acquire(key); ok {
		return b.Bytes(), b.Verified(), b, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, nil, err
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
		b := l.leave(key, ld, true)
		if errors.Is(ld.err, errPrefetchSkipped) {
			// The read-ahead gave way to other reads: load it for this
			// reader (its own load waits for room like any other).
			return l.FileHeld(ctx, key, size)
		}
		return ld.data, ld.err == nil, b, ld.err
	case <-ctx.Done():
		l.leave(key, ld, false)
		return nil, false, nil, ctx.Err()
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
// cancels it (a reader arriving later starts a new one), and the last one
// to leave a finished load lets go of the load's hold on its buffer. With
// take, the reader takes a hold of its own on the loaded buffer (returned;
// nil when there is none).
func (l *Loader) leave(key string, ld *load, take bool) *Buf {
	var mine, drop *Buf
	l.mu.Lock()
	if take && ld.buf != nil {
		ld.buf.Hold() // the load still holds it
		mine = ld.buf
	}
	ld.waiters--
	if ld.waiters <= 0 {
		if l.loads[key] == ld {
			delete(l.loads, key)
		}
		ld.cancel()
		if ld.bufHeld {
			ld.bufHeld, drop = false, ld.buf
		}
	}
	l.mu.Unlock()
	if drop != nil {
		drop.Release()
	}
	return mine
}

// run performs a whole-file load within the memory bound and caches the
// file once its checksums hold (logfile.ReadIndexPrefix checks the
// trailer, footer and body CRC-32C, the body mostly hashed as the store
// read it: streamCRC); a file failing them is data loss, not cached.
// The file is read into a buffer of the loader's pool (or mapped by a
// store that keeps it in a local file: objectstore.WithMapping), which
// the cache hands back (unmaps) once the file has left it and its last
// holder has let go;
// the load holds it until each reader waiting for it has taken a hold of
// its own (leave).
func (l *Loader) run(ctx context.Context, key string, size int64, ld *load) {
	defer l.wg.Done()
	defer ld.cancel()
	var (
		data, buf []byte
		unmap     func() // the store mapped the file (objectstore.WithMapping)
		err       error
	)
	ctx = objectstore.WithBuffers(ctx, func(n int) []byte {
		buf = l.pool.get(n)
		return buf
	})
	ctx = objectstore.WithMapping(ctx, func(release func()) { unmap = release })
	var sum streamCRC // the body's CRC-32C as it arrives (streamcrc.go)
	ctx = objectstore.WithReadObserver(ctx, sum.observe)
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
		prefix := func(bodyEnd int) (uint32, int) {
			crc, n := sum.prefix(data, bodyEnd)
			l.streamed.Add(int64(n))
			return crc, n
		}
		if _, cerr := logfile.ReadIndexPrefix(data, prefix); cerr != nil {
			data, err = nil, &DataLossError{fmt.Errorf("agent: file %s fails its checks: %w", key, cerr)}
		}
	}
	var b *Buf
	switch {
	case err == nil && unmap != nil:
		b = l.cache.AddVerifiedMapped(key, data, unmap)
	case unmap != nil:
		unmap() // failed: nobody saw it
	case err == nil && objectstore.OwnBuffer(data, buf):
		b = l.cache.AddVerifiedOwned(key, data, l.pool.put)
	case err == nil:
		l.cache.AddVerified(key, data) // the store's own buffer
	case buf != nil && data == nil:
		l.pool.put(buf) // nobody saw it
	}
	l.mu.Lock()
	if l.loads[key] == ld {
		delete(l.loads, key)
	}
	if ld.prefetch {
		l.prefetches--
	}
	ld.data, ld.err, ld.buf = data, err, b
	if b != nil && ld.waiters > 0 {
		ld.bufHeld, b = true, nil // the last waiter to leave releases it
	}
	close(ld.done)
	l.mu.Unlock()
	if b != nil {
		b.Release()
	}
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

// StreamHashedBytes counts the bytes of loaded files whose CRC-32C was
// computed as the store read them, not in a pass of its own afterwards.
func (l *Loader) StreamHashedBytes() int64 { return l.streamed.Load() }

// ReusedBuffers counts the whole-file loads that read into a buffer a
// file that left the cache had used.
func (l *Loader) ReusedBuffers() int64 { return l.pool.reused.Load() }

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
