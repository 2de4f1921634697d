package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// countingStore counts a reader's GETs, its whole-file GETs, and the most
// bytes being read at once.
type countingStore struct {
	objectstore.Store
	gets, whole    atomic.Int64
	inFlight, peak atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	s.gets.Add(1)
	if off == 0 { // whole-file loads ask for the recorded size + 1; batches start past the file header
		s.whole.Add(1)
	}
	buf, err := s.Store.Get(ctx, key, off, length)
	n := s.inFlight.Add(int64(len(buf)))
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	s.inFlight.Add(-int64(len(buf)))
	return buf, err
}

// raValue is record i of partition p: its name, padded to 1 KiB.
func raValue(p int32, i int) []byte {
	v := make([]byte, 1<<10)
	copy(v, fmt.Sprintf("p%d-r%d.", p, i))
	return v
}

// catchupPair runs a writer (linger 30 ms, so that concurrent produces to
// all partitions share files) and a cold reader with read-ahead for any
// lag, reading through wrap(store).
func catchupPair(t *testing.T, store objectstore.Store, wrap func(objectstore.Store) objectstore.Store, mutate func(*agent.Config)) (w, r *node, meta metadata.Store) {
	t.Helper()
	sm, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sm.Close() })
	meta = sm
	bcfg := batcher.DefaultConfig()
	bcfg.Linger = 30 * time.Millisecond
	wcfg := agent.DefaultConfig()
	wcfg.CacheBytes = 0
	w = startNode(t, meta, store, wcfg, bcfg)
	rcfg := agent.DefaultConfig()
	rcfg.ReadaheadBytes = 2 << 20
	rcfg.LoadTimeout = 2 * time.Second
	if mutate != nil {
		mutate(&rcfg)
	}
	r = startNode(t, meta, wrap(store), rcfg, bcfg)
	if rcfg.ReadaheadBytes > 0 {
		agent.SetReadahead(r.ag, 1, 200*time.Millisecond)
	}
	return w, r, meta
}

// produceShared writes rounds × perRound records to each of partitions
// partitions of topic, the partitions of a round concurrently (so that
// their batches share files).
func produceShared(t *testing.T, w *node, topic string, partitions int32, rounds, perRound int) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.c.CreateTopic(ctx, topic, partitions, nil); err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, partitions)
		for p := range partitions {
			wg.Go(func() {
				recs := make([]*floev1.Record, perRound)
				for i := range recs {
					recs[i] = &floev1.Record{Value: raValue(p, round*perRound+i)}
				}
				_, err := w.c.Produce(ctx, topic, p, recs...)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkRecords checks that recs of partition p are its records from
// offset from on, dense, with their values.
func checkRecords(t *testing.T, p int32, from int64, recs []*floev1.Record) {
	t.Helper()
	for i, r := range recs {
		off := from + int64(i)
		if r.GetOffset() != off || !bytes.Equal(r.GetValue(), raValue(p, int(off))) {
			t.Fatalf("partition %d: record %d is offset %d value %.12q, want offset %d value %.12q", p, i, r.GetOffset(), r.GetValue(), off, raValue(p, int(off)))
		}
	}
}

// A cold catch-up of partitions sharing files reads, with read-ahead,
// every record in order with its bytes. One partition's reader (Fetch)
// takes most bytes from the read-ahead's ranged GETs and never loads a
// file whole (the partition holds an eighth of each); before read-ahead
// every cache miss loaded its file whole. A subscription to all the
// partitions (on another cold reader) loads the shared files whole, once
// each, ahead of its readers.
func TestReadaheadCatchupSameRecords(t *testing.T) {
	const (
		parts    = 8
		rounds   = 12
		perRound = 64
		total    = rounds * perRound
	)
	store := objectstore.NewMemory()
	cs := &countingStore{}
	w, r, meta := catchupPair(t, store, func(s objectstore.Store) objectstore.Store { cs.Store = s; return cs }, nil)
	produceShared(t, w, "shared", parts, rounds, perRound)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Fetch, from an offset inside a batch, with small budgets.
	var fetched []*floev1.Record
	for off := int64(5); off < total; {
		f, err := r.c.Fetch(ctx, "shared", 3, off, 20<<10, 0)
		if err != nil {
			t.Fatalf("fetch at %d: %v", off, err)
		}
		fetched = append(fetched, f.GetRecords()...)
		off = f.GetNextOffset()
	}
	checkRecords(t, 3, 5, fetched)
	if len(fetched) != total-5 {
		t.Fatalf("fetched %d records, want %d", len(fetched), total-5)
	}
	_, served, _ := agent.ReadaheadStats(r.ag)
	if served < total<<10/2 {
		t.Errorf("read-ahead served %d bytes of %d", served, total<<10)
	}
	// Only the last read, at the head (where tailing readers share files),
	// may load a file whole.
	if cs.whole.Load() > 1 {
		t.Errorf("%d files loaded whole by a sparse catch-up (%d GETs)", cs.whole.Load(), cs.gets.Load())
	}

	cs2 := &countingStore{Store: store}
	r2 := startNode(t, meta, cs2, func() agent.Config {
		c := agent.DefaultConfig()
		c.ReadaheadBytes = 2 << 20
		return c
	}(), batcher.DefaultConfig())
	agent.SetReadahead(r2.ag, 1, 200*time.Millisecond)
	got := make(map[int32][]*floev1.Record)
	n := 0
	sctx, stop := context.WithCancel(ctx)
	err := r2.c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "shared", MaxBytes: 48 << 10,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
		func(resp *floev1.SubscribeResponse) error {
			got[resp.GetPartition()] = append(got[resp.GetPartition()], resp.GetRecords()...)
			if n += len(resp.GetRecords()); n >= parts*total {
				stop()
			}
			return nil
		})
	stop()
	if ctx.Err() != nil {
		t.Fatalf("subscription read %d of %d records: %v", n, parts*total, err)
	}
	for p := range int32(parts) {
		if len(got[p]) != total {
			t.Fatalf("partition %d: %d records, want %d", p, len(got[p]), total)
		}
		checkRecords(t, p, 0, got[p])
	}
	if cs2.whole.Load() == 0 {
		t.Errorf("a catch-up of all partitions loaded no file whole (%d GETs)", cs2.gets.Load())
	}
	t.Logf("one partition: %d GETs, %d whole; all partitions: %d GETs, %d whole", cs.gets.Load(), cs.whole.Load(), cs2.gets.Load(), cs2.whole.Load())
}

// Retention moving the log start past a reader whose next batches were
// read ahead: the reader hears OutOfRange, as without read-ahead, not the
// deleted records; from the new log start it reads the records there.
func TestReadaheadLogStartMovesUnderReader(t *testing.T) {
	w, r, _ := catchupPair(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store { return s }, nil)
	produceShared(t, w, "ret", 2, 10, 50)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, err := r.c.Fetch(ctx, "ret", 0, 0, 16<<10, 0)
	if err != nil || len(f.GetRecords()) == 0 {
		t.Fatalf("first fetch: %v, %v", f, err)
	}
	checkRecords(t, 0, 0, f.GetRecords())
	next := f.GetNextOffset()
	// Let the read-ahead run, then move the log start past the reader.
	deadline := time.Now().Add(5 * time.Second)
	for held, _, _ := agent.ReadaheadStats(r.ag); held == 0 && time.Now().Before(deadline); held, _, _ = agent.ReadaheadStats(r.ag) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := r.c.Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: "ret", Partition: 0, Offset: 300}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Fetch(ctx, "ret", 0, next, 16<<10, 0); code(err) != codes.OutOfRange {
		t.Fatalf("fetch at %d below the new log start 300: %v, want OutOfRange", next, err)
	}
	var recs []*floev1.Record
	for off := int64(300); off < 500; {
		f, err := r.c.Fetch(ctx, "ret", 0, off, 16<<10, 0)
		if err != nil {
			t.Fatalf("fetch at %d: %v", off, err)
		}
		recs = append(recs, f.GetRecords()...)
		off = f.GetNextOffset()
	}
	checkRecords(t, 0, 300, recs)
}

// A store that fails or hangs under the read-ahead's GETs: the reader gets
// its records (reading them itself) or an error, within about the GET
// bound, never wrong bytes and never a hang.
func TestReadaheadStoreFailsOrHangs(t *testing.T) {
	for _, fault := range []objectstore.Fault{objectstore.FaultError, objectstore.FaultHang} {
		t.Run(fmt.Sprint(fault), func(t *testing.T) {
			var faulty *objectstore.Faulty
			w, r, _ := catchupPair(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store {
				faulty = objectstore.WithFaults(s, objectstore.FaultConfig{})
				return faulty
			}, func(c *agent.Config) { c.LoadTimeout = 300 * time.Millisecond })
			produceShared(t, w, "flaky", 2, 10, 50)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var recs []*floev1.Record
			for off, i := int64(0), 0; off < 500; i++ {
				if i == 1 { // after the first read: the read-ahead's GETs fail
					faulty.Next(objectstore.OpGet, 6, fault)
				}
				start := time.Now()
				f, err := r.c.Fetch(ctx, "flaky", 1, off, 16<<10, 0)
				if d := time.Since(start); d > 5*time.Second {
					t.Fatalf("fetch at %d took %v", off, d)
				}
				if err != nil {
					if ctx.Err() != nil {
						t.Fatal(err)
					}
					t.Logf("fetch at %d: %v (retrying)", off, err)
					continue
				}
				recs = append(recs, f.GetRecords()...)
				off = f.GetNextOffset()
			}
			checkRecords(t, 1, 0, recs)
		})
	}
}

// A reader that leaves (its subscription cancelled mid catch-up) frees the
// read-ahead budget once its stream is idle, and the agent's read-ahead
// goroutines and loads are gone once it stops.
func TestReadaheadCancelledReaderFreesBudget(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs after the nodes stop
	w, r, _ := catchupPair(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store { return s }, nil)
	produceShared(t, w, "gone", 4, 10, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	n := 0
	var maxHeld int64
	_ = r.c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "gone", MaxBytes: 32 << 10, Partitions: []int32{2}, // sparse: ranged GETs
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
		func(resp *floev1.SubscribeResponse) error {
			held, served, _ := agent.ReadaheadStats(r.ag)
			maxHeld = max(maxHeld, held)
			// Leave mid catch-up once the read-ahead has shown itself (on a
			// loaded machine its first GETs can land after 200 records), and
			// at the latest with a tenth of the partition unread.
			n += len(resp.GetRecords())
			if (n >= 200 && (maxHeld > 0 || served > 0)) || n >= 576 {
				stop()
			}
			return nil
		})
	stop()
	held, served, streams := agent.ReadaheadStats(r.ag)
	// Held bytes sampled between answers can all be 0 on a loaded machine
	// (each load served before the next answer): bytes served from the
	// read-ahead show it ran as well.
	if (maxHeld == 0 && served == 0) || streams == 0 {
		t.Fatalf("no read-ahead while reading (at most %d bytes held, %d served, %d streams)", maxHeld, served, streams)
	}
	deadline := time.Now().Add(5 * time.Second)
	for held != 0 || streams != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes and %d streams still held after the reader left", held, streams)
		}
		time.Sleep(10 * time.Millisecond)
		held, _, streams = agent.ReadaheadStats(r.ag)
	}
	// All the partitions at once (whole files loaded ahead into the
	// cache), left midway: the loads end with the agent (goleak above).
	sctx, stop = context.WithCancel(ctx)
	n = 0
	_ = r.c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "gone", MaxBytes: 32 << 10,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
		func(resp *floev1.SubscribeResponse) error {
			if n += len(resp.GetRecords()); n >= 400 {
				stop()
			}
			return nil
		})
	stop()
}

// Many cold readers far behind at once (without a read cache, so that
// the read-ahead reads by ranges): it never takes more than its budget, and the bytes being read at once stay within the
// loading bound plus the read-ahead budget.
func TestReadaheadManyColdReadersBounded(t *testing.T) {
	const (
		parts   = 64
		budget  = 1 << 20
		loading = 2 << 20
	)
	cs := &countingStore{}
	w, r, _ := catchupPair(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store { cs.Store = s; return cs }, func(c *agent.Config) {
		c.ReadaheadBytes, c.MaxLoadingBytes, c.MaxLoadWait = budget, loading, 20*time.Second
		c.CacheBytes = 0 // no whole-file loads: every read-ahead is a ranged GET within the budget
	})
	produceShared(t, w, "many", parts, 4, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var peakHeld atomic.Int64
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			held, _, _ := agent.ReadaheadStats(r.ag)
			peakHeld.Store(max(peakHeld.Load(), held))
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := range int32(parts) {
		wg.Go(func() {
			var recs []*floev1.Record
			for off := int64(0); off < 128; {
				f, err := r.c.Fetch(ctx, "many", p, off, 8<<10, 0)
				if err != nil {
					errs <- fmt.Errorf("partition %d at %d: %w", p, off, err)
					return
				}
				recs = append(recs, f.GetRecords()...)
				off = f.GetNextOffset()
			}
			for i, rec := range recs {
				if rec.GetOffset() != int64(i) || !bytes.Equal(rec.GetValue(), raValue(p, i)) {
					errs <- fmt.Errorf("partition %d: record %d is offset %d", p, i, rec.GetOffset())
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	sampler.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d readers: read-ahead held at most %d KiB (budget %d KiB); at most %d KiB read at once (bound %d KiB)",
		parts, peakHeld.Load()>>10, budget>>10, cs.peak.Load()>>10, (budget+loading)>>10)
	if p := peakHeld.Load(); p > budget || p == 0 {
		t.Errorf("read-ahead held %d bytes at most, budget %d", p, budget)
	}
	if p := cs.peak.Load(); p > budget+loading {
		t.Errorf("%d bytes read at once, bound %d", p, budget+loading)
	}
}

// A compacted topic read far behind with (ranged) read-ahead, by Fetch with small
// budgets (so that reads start inside gaps) and by Subscribe: every
// surviving record at its original offset, in order, none twice, the
// latest value of every key, and no error at a gap.
func TestReadaheadCompactedTopic(t *testing.T) {
	store := objectstore.NewMemory()
	// Without a read cache the read-ahead reads ranges (segments), whose
	// batches the compaction left with gaps.
	w, r, meta := catchupPair(t, store, func(s objectstore.Store) objectstore.Store { return s }, func(c *agent.Config) { c.CacheBytes = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.c.CreateTopic(ctx, "keyed", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	const rounds, keys = 20, 8
	original := map[int64]string{}
	for round := range rounds {
		var recs []*floev1.Record
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			if k >= 4 && round > 9 {
				key = fmt.Sprintf("late%d", k) // k4..k7 stop at round 9
			}
			v := fmt.Sprintf("r%d", round)
			recs = append(recs, &floev1.Record{Key: []byte(key), Value: []byte(v)})
			original[int64(round*keys+k)] = key + "=" + v
		}
		if _, err := w.c.Produce(ctx, "keyed", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	comp, err := compactor.New(meta, store, func() compactor.Config {
		cfg := compactor.DefaultConfig()
		cfg.Owner, cfg.MergeSmallBytes, cfg.CompactMinAge = "test", 0, 0
		return cfg
	}())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := comp.RunOnce(ctx); err != nil || res.RecordsRemoved == 0 {
		t.Fatalf("compaction: %+v, %v", res, err)
	}
	want := map[string]string{}
	for off := int64(0); off < rounds*keys; off++ {
		k, v := splitKV(original[off])
		want[k] = v
	}
	check := func(how string, recs []*floev1.Record) {
		t.Helper()
		checkCompacted(t, how, recs, original, want, rounds*keys)
	}
	var fetched []*floev1.Record
	for off := int64(0); off < rounds*keys; {
		f, err := r.c.Fetch(ctx, "keyed", 0, off, 1, 0)
		if err != nil {
			t.Fatalf("fetch at %d: %v", off, err)
		}
		if f.GetNextOffset() <= off {
			t.Fatalf("fetch at %d: next offset %d", off, f.GetNextOffset())
		}
		fetched = append(fetched, f.GetRecords()...)
		off = f.GetNextOffset()
		if _, served, _ := agent.ReadaheadStats(r.ag); served == 0 && off < rounds*keys {
			// Until the read-ahead has served once, give its fill the
			// time to plan ahead of this reader (on a loaded machine a
			// fast reader can otherwise outrun it on every request).
			waitReadaheadHeld(t, r.ag)
		}
	}
	check("fetch", fetched)
	var subscribed []*floev1.Record
	sctx, stop := context.WithCancel(ctx)
	_ = r.c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "keyed", MaxBytes: 1,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
		func(resp *floev1.SubscribeResponse) error {
			subscribed = append(subscribed, resp.GetRecords()...)
			if n := len(subscribed); n > 0 && subscribed[n-1].GetOffset() == rounds*keys-1 {
				stop()
			}
			return nil
		})
	stop()
	if ctx.Err() != nil {
		t.Fatalf("subscription did not reach the end: %d records", len(subscribed))
	}
	check("subscribe", subscribed)
	if _, served, _ := agent.ReadaheadStats(r.ag); served == 0 {
		t.Error("the read-ahead served nothing")
	}
}

// waitReadaheadHeld waits (at most 5 s) for a's read-ahead to hold bytes
// ahead of a reader.
func waitReadaheadHeld(t *testing.T, a *agent.Agent) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if held, _, _ := agent.ReadaheadStats(a); held > 0 {
			return
		}
	}
}
