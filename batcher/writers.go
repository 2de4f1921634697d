package batcher

import (
	"context"
	"time"
)

// Writers: sealing a file early once every client writing to it waits on it.
//
// A Kafka producer keeps at most a few produce requests in flight per
// broker (franz-go with idempotence: one; the Java client: five). Once
// they are all waiting on the open file, that file gains no batch until it
// is sealed: lingering on only moves the bytes into the clients' buffers
// and adds the rest of the linger to every record in them. The front end
// tells the batcher where each client connection stands (a Writer: a
// request begun, its batches appended, its answer sent) and the batcher
// seals the open file as soon as sealWaited says so.
//
// A client's cap is not in the protocol: a Writer takes the most requests
// it has seen in flight at once as the cap. A client that pipelines more
// than it has yet shown is then taken as waiting a little early, and its
// next request goes into the next file: never wrong, at most one more
// file.

// Writer is one client connection's produce requests, as the batcher
// sees them. Its methods are safe on a nil Writer (they do nothing) and
// for concurrent use.
type Writer struct {
	b *Batcher
	// Guarded by b.mu:
	inflight    int   // requests begun and not ended
	maxInflight int   // the most seen at once: the client's apparent cap
	appending   bool  // a request begun and not all of its batches appended
	file        *file // the file its latest batch went into
	closed      bool
}

// NewWriter returns a Writer for one client connection. Close it when
// the connection ends.
func (b *Batcher) NewWriter() *Writer { return &Writer{b: b} }

type writerKey struct{}

// WithWriter returns ctx carrying w: Append and its variants called with
// it count the batch as w's.
func WithWriter(ctx context.Context, w *Writer) context.Context {
	if w == nil {
		return ctx
	}
	return context.WithValue(ctx, writerKey{}, w)
}

func writerFrom(ctx context.Context) *Writer {
	w, _ := ctx.Value(writerKey{}).(*Writer)
	return w
}

// waiting reports whether w can add nothing more until an answer comes:
// all the requests it is allowed are in flight, their batches appended.
// b.mu is held.
func (w *Writer) waiting() bool {
	return !w.closed && !w.appending && w.inflight > 0 && w.inflight >= w.maxInflight
}

// change runs fn on w under the batcher's lock, keeping the open file's
// count of waiting writers right, then seals the file if sealWaited says
// so.
func (w *Writer) change(fn func()) {
	if w == nil {
		return
	}
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	in := b.cur != nil && w.file == b.cur
	was, wasBusy := w.waiting(), w.inflight > 0 && !w.closed
	fn()
	is, isBusy := w.waiting(), w.inflight > 0 && !w.closed
	if in && was != is {
		if is {
			b.cur.waiting++
		} else {
			b.cur.waiting--
		}
	}
	if wasBusy != isBusy {
		if isBusy {
			b.busy++
		} else {
			b.busy--
		}
	}
	b.maybeSealWaitedLocked(time.Now())
}

// Begin counts a request of w's as in flight, its batches not yet
// appended. Every Begin is followed by Appended, then End.
func (w *Writer) Begin() {
	w.change(func() {
		w.inflight++
		w.maxInflight = max(w.maxInflight, w.inflight)
		w.appending = true
	})
}

// Appended says that every batch of the request begun last is appended
// (or refused): w may now be waiting on the open file.
func (w *Writer) Appended() { w.change(func() { w.appending = false }) }

// End says that a request of w's is answered (or will not be).
func (w *Writer) End() {
	w.change(func() {
		if w.inflight > 0 {
			w.inflight--
		}
	})
}

// Close says that w's connection ended: w counts no more.
func (w *Writer) Close() { w.change(func() { w.closed = true }) }

// joinLocked counts a batch of w's appended to the open file f. b.mu is
// held.
func (w *Writer) joinLocked(f *file) {
	if w.file == f {
		return
	}
	w.file = f
	if w.waiting() {
		f.waiting++
	}
}

// maybeSealWaitedLocked seals the open file if sealWaited says so. b.mu
// is held.
func (b *Batcher) maybeSealWaitedLocked(now time.Time) {
	f := b.cur
	if f == nil || !b.cfg.SealWhenWaited {
		return
	}
	if sealWaited(waitedState{
		busy: b.busy, waiting: f.waiting, anonymous: f.anonymous, bytes: f.body,
		recentBytes: b.ingest.perWindow(now), maxFileBytes: b.cfg.MaxFileBytes,
		age: now.Sub(f.openedAt), minAge: b.waitedMinAge(),
	}) {
		b.sealLocked(SealWaited)
	}
}

// waitedState is what sealWaited decides on.
type waitedState struct {
	busy      int  // writers with a request in flight
	waiting   int  // of them, those waiting on the open file (Writer.waiting, their latest batch in it)
	anonymous bool // the open file holds a batch of no Writer (a gRPC producer)
	bytes     int  // the open file's batches (0: empty)
	// recentBytes were appended in the last linger (ingestWindow).
	recentBytes int64
	// maxFileBytes is the size at which a file is sealed anyway.
	maxFileBytes int
	// age is how long the file has been open; minAge the least age at
	// which it may be sealed early (Batcher.waitedMinAge).
	age, minAge time.Duration
}

// waitedMinAge is how long a file stays open before sealWaited may seal
// it: two fifths of the linger (see sealWaited).
func (b *Batcher) waitedMinAge() time.Duration {
	if b.cfg.waitedMinAge > 0 {
		return b.cfg.waitedMinAge
	}
	return b.cfg.Linger * 2 / 5
}

// armWaitedLocked starts f's timer for sealWaited's minimum age.
func (b *Batcher) armWaitedLocked(f *file) {
	d := b.waitedMinAge()
	if !b.cfg.SealWhenWaited || d <= 0 {
		return
	}
	f.early = time.AfterFunc(d, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.cur == f {
			b.maybeSealWaitedLocked(time.Now())
		}
	})
}

// sealWaited is the rule: seal the open file before its linger ends when
// every writer with a request in flight is waiting on it (so it can gain
// no batch until it is sealed) and the file is at least minAge (two
// fifths of the linger) old, provided that sealing now keeps the PUTs per
// byte low: the file already holds an eighth of a full file, or the
// agent's recent ingest fills a file within one linger (at that rate files
// are sealed for size anyway, and each file sealed early holds what
// arrived in one commit round trip). Below both, the linger goes on
// gathering the batches of many mostly idle clients into one file, as it
// is there to. A file holding a batch of no writer (a gRPC producer,
// whose requests in flight the batcher does not see) lingers as before.
//
// Why two fifths of the linger: a client with one request in flight holds
// what it is given meanwhile until the answer, so a record waits for the
// request in flight and then for its own: about two file ages plus the
// commit round trip. Files sealed at half the linger would put that at the
// linger plus a round trip, right at the floor bound; two fifths leave a
// fifth of the linger to spare, for at most 2.5 times the files per linger.
// Sealing at once (no minimum age) made a file per commit round trip and,
// in the measured runs, 1.5x the agent CPU of lingering; two fifths cost
// about 1.1x, half about 1.05x (docs/benchmarks.md).
func sealWaited(s waitedState) bool {
	switch {
	case s.bytes == 0, s.anonymous, s.busy == 0, s.waiting < s.busy, s.age < s.minAge:
		return false
	}
	return s.bytes >= s.maxFileBytes/8 || s.recentBytes >= int64(s.maxFileBytes)
}

// ingestWindow counts the bytes appended in the current and the previous
// window of one linger each.
type ingestWindow struct {
	start      time.Time
	cur, prev  int64
	windowSize time.Duration
}

func (iw *ingestWindow) roll(now time.Time) {
	if iw.windowSize <= 0 {
		return
	}
	switch d := now.Sub(iw.start); {
	case d < iw.windowSize:
		return
	case d < 2*iw.windowSize:
		iw.prev, iw.cur = iw.cur, 0
		iw.start = iw.start.Add(iw.windowSize)
	default:
		iw.prev, iw.cur = 0, 0
		iw.start = now
	}
}

// add counts n bytes appended at now.
func (iw *ingestWindow) add(now time.Time, n int64) {
	iw.roll(now)
	iw.cur += n
}

// perWindow is the bytes appended in the last full window, or in the
// current one if that is more.
func (iw *ingestWindow) perWindow(now time.Time) int64 {
	iw.roll(now)
	return max(iw.prev, iw.cur)
}
