package readpath

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/floe-broker/floe/metadata"
)

// Read-ahead for readers far behind the head (catch-up).
//
// A reader whose request leaves more than readaheadMinLag bytes between
// its last batch and the high watermark gets a stream for its partition:
// while it decodes and sends what it read, the stream looks up the
// partition's next batches (findBatches) and reads them ahead, many reads
// at once across partitions and files, in one of two ways per file:
//
//   - dense: when this agent's catch-up readers of the topic together
//     likely want a quarter of the file (DenseFile: the partition's share times
//     the readers), the file is loaded whole into the read cache through
//     the loader (loader.prefetch), once for all of them, at most
//     readaheadDenseFiles files ahead and readaheadLoads loads at once;
//   - sparse: otherwise the stream reads its partition's byte ranges, one
//     segment (ranged GET) per run of adjacent batches in a file.
//
// The reader's next request still takes its batch references from
// findBatches, as every read does, and only takes the bytes of a
// reference from a segment that covers the same range of the same file
// (files are immutable: those are the bytes a GET would return), or from
// the cache; whatever else it reads itself (readBehind). So read-ahead
// changes where bytes come from, never which batches a reader gets; the
// batches' CRCs are checked by whoever decodes them, as on every read
// path (whole files by logfile.ReadIndex when loaded, after which the
// batch data plane does not check their batches' CRCs again; a segment's
// bytes are never counted as verified).
//
// Memory: the bytes of all segments, read or in flight, are taken from one
// agent-wide budget (Config.ReadaheadBytes) with TryAcquire, so read-ahead
// never makes a reader wait for room: without room it reads less ahead. A
// segment gives its bytes back once its reader has moved past it, when its
// stream is idle for readaheadIdle (the reader left), or at close. Dense
// files are held by the read cache (CacheBytes) and, while loading, by
// MaxLoadingBytes. Segments are not cached: a sparse catch-up does not
// evict the tail's files from the read cache.

// Read-ahead tuning.
const (
	// readaheadMinLag: a reader further behind the head than this (bytes,
	// estimated from its batches' density) gets read-ahead.
	readaheadMinLag = 8 << 20
	// readaheadSegMax bounds one segment (one GET).
	readaheadSegMax = 8 << 20
	// readaheadGap: two batches of one file at most this far apart go in
	// one segment (the gap's bytes are read and dropped).
	readaheadGap = 64 << 10
	// readaheadGets bounds the read-ahead GETs in flight, per agent.
	readaheadGets = 16
	// readaheadIdle: a stream unread for this long is dropped with its
	// segments (its reader left).
	readaheadIdle = 5 * time.Second
	// readaheadMaxStreams bounds the streams; past it the least recently
	// read one is dropped.
	readaheadMaxStreams = 4096
	// readaheadLoads bounds the whole-file loads the read-ahead runs at
	// once (they also count in MaxLoadingBytes).
	readaheadLoads = 8
	// readaheadDenseFiles bounds the files a stream loads whole ahead of
	// its reader (they wait in the read cache).
	readaheadDenseFiles = 8
)

// Finder looks up batch references (Index.FindBatches on the metadata store).
type Finder func(ctx context.Context, topicID int64, p int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error)

// Readahead holds the read-ahead streams of an agent.
type Readahead struct {
	l       *Loader // the store, and whole-file loads into the cache
	store   ObjectReader
	fileMax int64 // files up to this size may be loaded whole (0: never)
	budget  *semaphore.Weighted
	max     int64
	timeout time.Duration // bound of one lookup and one GET (LoadTimeout)
	idle    time.Duration // readaheadIdle; tests shorten it
	minLag  atomic.Int64  // readaheadMinLag; tests lower it
	served  atomic.Int64  // bytes readers took from segments
	gets    chan struct{} // GET slots (readaheadGets)
	ctx     context.Context
	stop    context.CancelFunc

	mu      sync.Mutex // protects streams, held, closed and every stream's and segment's fields marked so
	streams map[Key]*raStream
	held    int64 // budget taken
	closed  bool
	sweeper *time.Timer

	wg sync.WaitGroup // fill and GET goroutines
}

// raStream is one partition's read-ahead.
type raStream struct {
	key     Key
	segs    []*raSeg  // offset order; guarded by Readahead.mu
	next    int64     // first offset not yet planned; guarded
	hw      int64     // high watermark last seen; guarded
	window  int64     // bytes to keep ahead; guarded
	filling bool      // a fill goroutine runs; guarded
	used    time.Time // last read; guarded
	dropped bool      // guarded
	find    Finder
}

// raSeg is one ranged GET: [off, off+n) of file key, holding the batches
// of offsets first..last.
type raSeg struct {
	key         string
	off, n      int64
	first, last int64
	size        int64 // the file's
	whole       bool  // the file is loaded whole into the cache instead
	weight      int64 // budget taken (n, or 0 for whole)
	cancel      context.CancelFunc

	done chan struct{} // closed once data and err are set
	data []byte
	err  error

	finished, released bool // guarded by Readahead.mu
}

func newReadahead(l *Loader, cfg Config) *Readahead {
	if cfg.ReadaheadBytes <= 0 {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	ra := &Readahead{
		l: l, store: l.store, budget: semaphore.NewWeighted(cfg.ReadaheadBytes), max: cfg.ReadaheadBytes,
		timeout: cfg.LoadTimeout, idle: readaheadIdle, gets: make(chan struct{}, readaheadGets),
		ctx: ctx, stop: stop, streams: make(map[Key]*raStream),
	}
	if cfg.CacheBytes > 0 {
		ra.fileMax = cfg.CacheFileMaxBytes
	}
	ra.minLag.Store(readaheadMinLag)
	return ra
}

// Behind reports whether a reader of refs, with the high watermark at hw,
// is far enough behind for read-ahead (and sparse reads).
func (ra *Readahead) Behind(refs []metadata.BatchRef, hw int64) bool {
	lag := int64(readaheadMinLag)
	if ra != nil {
		lag = ra.minLag.Load()
	}
	return behindBytes(refs, hw) >= lag
}

// Readers counts the catch-up readers of topic (at least 1: the caller).
func (ra *Readahead) Readers(topic int64) int {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return max(ra.readersLocked(topic), 1)
}

// wholeAheadLocked counts the files s loads whole ahead of its reader.
func wholeAheadLocked(s *raStream) int {
	n := 0
	for _, g := range s.segs {
		if g.whole {
			n++
		}
	}
	return n
}

// readersLocked counts the streams of topic read within the idle period.
func (ra *Readahead) readersLocked(topic int64) int {
	now, n := time.Now(), 0
	for k, s := range ra.streams {
		if k.Topic == topic && now.Sub(s.used) < ra.idle {
			n++
		}
	}
	return n
}

// covers reports whether s holds the bytes of r.
func (s *raSeg) covers(r metadata.BatchRef) bool {
	return r.FileKey == s.key && r.ByteOffset >= s.off && r.ByteOffset+r.ByteLength <= s.off+s.n
}

// Serve takes the bytes of refs (one partition, offset order) that the
// stream of k holds into out, waiting for segments in flight, and returns
// the indexes of refs it could not serve. It then plans more read-ahead
// from the end of refs, up to the high watermark hw.
func (ra *Readahead) Serve(ctx context.Context, k Key, refs []metadata.BatchRef, out [][]byte, hw int64, maxBytes int, find Finder) ([]int, error) {
	pos, end := refs[0].BaseOffset, refs[len(refs)-1].LastOffset+1
	ra.mu.Lock()
	if ra.closed {
		ra.mu.Unlock()
		return allIndexes(len(refs)), nil
	}
	s := ra.streamLocked(k, find)
	s.used = time.Now()
	s.hw = max(s.hw, hw)
	s.window = readaheadWindow(maxBytes, ra.max)
	// Segments wholly before the reader are done with (it read them, or
	// jumped past them).
	keep := s.segs[:0]
	for _, g := range s.segs {
		if g.last < pos {
			ra.releaseLocked(g)
			continue
		}
		keep = append(keep, g)
	}
	clear(s.segs[len(keep):])
	s.segs = keep
	if len(s.segs) == 0 && !s.filling {
		s.next = end // plan from the reader's end
	} else {
		// A fill in flight goes on from where it started: resetting it at
		// every request would starve it behind a fast reader.
		s.next = max(s.next, end)
	}
	found := make([]*raSeg, len(refs))
	for i, r := range refs {
		for _, g := range s.segs {
			if g.covers(r) {
				found[i] = g
				break
			}
		}
	}
	ra.fillLocked(s)
	ra.mu.Unlock()

	var miss []int
	for i, r := range refs {
		g := found[i]
		if g == nil || g.whole {
			miss = append(miss, i) // whole: read from the cache, or joining the load
			continue
		}
		select {
		case <-g.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if g.err != nil || int64(len(g.data)) != g.n {
			miss = append(miss, i) // read it again, by the reader's own GET
			continue
		}
		out[i] = g.data[r.ByteOffset-g.off : r.ByteOffset-g.off+r.ByteLength : r.ByteOffset-g.off+r.ByteLength]
		ra.served.Add(r.ByteLength)
	}
	return miss, nil
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// streamLocked returns k's stream, creating it; it drops idle streams and,
// past readaheadMaxStreams, the least recently read one.
func (ra *Readahead) streamLocked(k Key, find Finder) *raStream {
	if s, ok := ra.streams[k]; ok {
		return s
	}
	ra.sweepLocked(time.Now())
	if len(ra.streams) >= readaheadMaxStreams {
		var old *raStream
		for _, s := range ra.streams {
			if old == nil || s.used.Before(old.used) {
				old = s
			}
		}
		ra.dropLocked(old)
	}
	s := &raStream{key: k, find: find}
	ra.streams[k] = s
	if ra.sweeper == nil {
		ra.sweeper = time.AfterFunc(ra.idle, ra.sweep)
	}
	return s
}

// sweep drops the idle streams; it runs every idle period while streams
// exist.
func (ra *Readahead) sweep() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.sweepLocked(time.Now())
	if len(ra.streams) > 0 && !ra.closed {
		ra.sweeper.Reset(ra.idle)
	} else {
		ra.sweeper = nil
	}
}

func (ra *Readahead) sweepLocked(now time.Time) {
	for _, s := range ra.streams {
		if now.Sub(s.used) >= ra.idle {
			ra.dropLocked(s)
		}
	}
}

// dropLocked drops s and its segments.
func (ra *Readahead) dropLocked(s *raStream) {
	s.dropped = true
	for _, g := range s.segs {
		ra.releaseLocked(g)
	}
	s.segs = nil
	if ra.streams[s.key] == s {
		delete(ra.streams, s.key)
	}
}

// releaseLocked gives a segment's bytes back: at once when its GET has
// ended, else when it ends (its GET is cancelled).
func (ra *Readahead) releaseLocked(g *raSeg) {
	if g.released {
		return
	}
	g.released = true
	g.cancel()
	if g.finished {
		ra.budget.Release(g.weight)
		ra.held -= g.weight
	}
}

// fillLocked starts s's fill goroutine unless it runs or s has its window.
func (ra *Readahead) fillLocked(s *raStream) {
	if s.filling || s.dropped || ra.closed || s.next >= s.hw || ra.aheadLocked(s) >= s.window/2 {
		return
	}
	s.filling = true
	ra.wg.Add(1)
	go ra.fill(s)
}

// aheadLocked returns the bytes s holds or reads.
func (ra *Readahead) aheadLocked(s *raStream) int64 {
	var n int64
	for _, g := range s.segs {
		n += g.n
	}
	return n
}

// fill plans and starts s's GETs until it holds its window, reaches the
// high watermark, or the budget has no room.
func (ra *Readahead) fill(s *raStream) {
	defer ra.wg.Done()
	for {
		ra.mu.Lock()
		want := s.window - ra.aheadLocked(s)
		from := s.next
		if s.dropped || ra.closed || from >= s.hw || want < s.window/4 {
			s.filling = false
			ra.mu.Unlock()
			return
		}
		ra.mu.Unlock()
		ctx, cancel := context.WithTimeout(ra.ctx, ra.timeout)
		refs, st, err := s.find(ctx, s.key.Topic, s.key.Part, from, want)
		cancel()
		ra.mu.Lock()
		if err != nil || len(refs) == 0 || s.dropped || ra.closed {
			// On failure the reader reads by itself; its next request
			// plans again.
			s.filling = false
			ra.mu.Unlock()
			return
		}
		s.hw = max(s.hw, st.HighWatermark)
		readers := ra.readersLocked(s.key.Topic)
		full := false
		for _, g := range planSegments(refs, readaheadGap, readaheadSegMax) {
			if g.last < s.next {
				continue // the reader passed it meanwhile
			}
			if DenseFile(g.n, g.size, readers, ra.fileMax) {
				// Read by many of this agent's catch-up readers: one load
				// of the whole file, shared through the cache, at most
				// readaheadDenseFiles files ahead of the reader.
				if wholeAheadLocked(s) >= readaheadDenseFiles || !ra.l.prefetch(g.key, g.size) {
					full = true
					break
				}
				g.whole = true
				g.cancel, g.done, g.finished = func() {}, make(chan struct{}), true
				close(g.done)
			} else {
				if !ra.budget.TryAcquire(g.n) {
					full = true
					break
				}
				g.weight = g.n
				ra.held += g.n
				ra.startLocked(g)
			}
			s.segs = append(s.segs, g)
			s.next = g.last + 1
		}
		if full {
			s.filling = false
			ra.mu.Unlock()
			return
		}
		ra.mu.Unlock()
	}
}

// startLocked starts g's GET.
func (ra *Readahead) startLocked(g *raSeg) {
	ctx, cancel := context.WithTimeout(ra.ctx, ra.timeout)
	g.cancel, g.done = cancel, make(chan struct{})
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		defer cancel()
		var data []byte
		var err error
		select {
		case ra.gets <- struct{}{}:
			data, err = ra.store.Get(ctx, g.key, g.off, g.n)
			<-ra.gets
			if err == nil && int64(len(data)) != g.n {
				data, err = nil, fmt.Errorf("agent: read ahead %s [%d, %d): %d bytes came back", g.key, g.off, g.off+g.n, len(data))
			}
		case <-ctx.Done():
			err = ctx.Err()
		}
		ra.mu.Lock()
		g.data, g.err = data, err
		g.finished = true
		if g.released {
			g.data = nil
			ra.budget.Release(g.weight)
			ra.held -= g.weight
		}
		close(g.done)
		ra.mu.Unlock()
	}()
}

// kick restarts the fills of the streams that stopped for want of room.
func (ra *Readahead) kick() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for _, s := range ra.streams {
		ra.fillLocked(s)
	}
}

// close drops every stream, stops the GETs and waits for the goroutines.
func (ra *Readahead) close() {
	ra.mu.Lock()
	ra.closed = true
	for _, s := range ra.streams {
		ra.dropLocked(s)
	}
	if ra.sweeper != nil {
		ra.sweeper.Stop()
		ra.sweeper = nil
	}
	ra.mu.Unlock()
	ra.stop()
	ra.wg.Wait()
}
