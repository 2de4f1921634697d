package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// heldStore holds each buffer it read for delay before handing it over,
// as a download does, and records the most bytes held at once.
type heldStore struct {
	objectstore.Store
	delay      time.Duration
	held, peak atomic.Int64
}

func (s *heldStore) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	buf, err := s.Store.Get(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	n := s.held.Add(int64(len(buf)))
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	defer s.held.Add(-int64(len(buf)))
	select {
	case <-time.After(s.delay):
		return buf, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// gateStore blocks its first Get until release is closed or the Get's
// context ends (then it closes cancelled).
type gateStore struct {
	objectstore.Store
	calls     atomic.Int64
	release   chan struct{}
	cancelled chan struct{}
}

func newGate(s objectstore.Store) *gateStore {
	return &gateStore{Store: s, release: make(chan struct{}), cancelled: make(chan struct{})}
}

func (g *gateStore) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	if g.calls.Add(1) == 1 {
		select {
		case <-g.release:
		case <-ctx.Done():
			close(g.cancelled)
			return nil, ctx.Err()
		}
	}
	return g.Store.Get(ctx, key, off, length)
}

// writerAndReader runs a writer agent and a reader agent on one SQLite
// store and one object store; the reader reads through readerStore (which
// wraps store) with its own config, so its cache starts cold.
func writerAndReader(t *testing.T, store objectstore.Store, readerStore func(objectstore.Store) objectstore.Store, mutate func(*agent.Config)) (w, r *node, meta metadata.Store) {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 2 * time.Millisecond
	wcfg := acfg
	wcfg.CacheBytes = 0 // the writer holds no files: memory figures are the reader's
	w = startNode(t, meta, store, wcfg, bcfg)
	mutate(&acfg)
	r = startNode(t, meta, readerStore(store), acfg, bcfg)
	return w, r, meta
}

// produceFiles writes one file per partition of topic: perFile bytes in
// records of 1 KiB.
func produceFiles(t *testing.T, w *node, topic string, partitions int32, perFile int) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.c.CreateTopic(ctx, topic, partitions, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]*floev1.Record, perFile>>10)
	for i := range recs {
		recs[i] = client.Value(nil, make([]byte, 1<<10))
	}
	for p := int32(0); p < partitions; p++ {
		if _, err := w.c.Produce(ctx, topic, p, recs...); err != nil {
			t.Fatal(err)
		}
	}
}

// 200 consumers reading cold files at once never have more than
// MaxLoadingBytes being read from the object store; before the bound each
// cache miss loaded its whole file at once (200 x 512 KiB here).
func TestColdReadersStayWithinLoadingBound(t *testing.T) {
	const (
		readers = 200
		perFile = 512 << 10
		bound   = 8 << 20
		cache   = 16 << 20
	)
	dir, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	held := &heldStore{delay: 150 * time.Millisecond}
	w, r, _ := writerAndReader(t, dir, func(s objectstore.Store) objectstore.Store { held.Store = s; return held }, func(c *agent.Config) {
		c.MaxLoadingBytes = bound
		c.CacheBytes = cache
		c.MaxLoadWait = 30 * time.Second
	})
	produceFiles(t, w, "cold", readers, perFile)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A low GC target makes the heap follow what is live, not garbage.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	heapBefore, hwmBefore := heapObjects(), resetHWM(t)
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			peakHeap.Store(max(peakHeap.Load(), heapObjects()))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for p := int32(0); p < readers; p++ {
		wg.Go(func() {
			f, err := r.c.Fetch(ctx, "cold", p, 0, 1, 0)
			if err == nil && (len(f.GetRecords()) != 1 || len(f.GetRecords()[0].GetValue()) != 1<<10) {
				err = fmt.Errorf("partition %d: %d records", p, len(f.GetRecords()))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	hwm := vmHWM(t)
	t.Logf("%d cold readers of %d KiB files: at most %d KiB read at once (bound %d KiB); heap objects grew by at most %d MiB, VmHWM by %d MiB (loading bound %d MiB + cache %d MiB)",
		readers, perFile>>10, held.peak.Load()>>10, bound>>10, (peakHeap.Load()-heapBefore)>>20, (hwm-hwmBefore)>>20, bound>>20, cache>>20)
	if p := held.peak.Load(); p > bound {
		t.Fatalf("%d bytes were being read at once, bound %d", p, bound)
	}
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// resetHWM resets the process's peak RSS (VmHWM) to its current RSS and
// returns it.
func resetHWM(t *testing.T) uint64 {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset VmHWM: %v", err)
	}
	return vmHWM(t)
}

// vmHWM returns the process's peak RSS in bytes (0 where /proc is absent).
func vmHWM(t *testing.T) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Logf("no /proc/self/status: %v", err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// A load whose readers have all left is cancelled at once, not run to its
// own deadline.
func TestLoadCancelledWhenReadersLeave(t *testing.T) {
	var gate *gateStore
	w, r, _ := writerAndReader(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store { gate = newGate(s); return gate },
		func(c *agent.Config) { c.LoadTimeout = time.Minute })
	produceFiles(t, w, "t", 1, 4<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := r.c.Fetch(ctx, "t", 0, 0, 0, 0); code(err) != codes.DeadlineExceeded {
		t.Fatalf("fetch of a stuck file: %v, want DeadlineExceeded", err)
	}
	select {
	case <-gate.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the load went on after its only reader left")
	}
}

// Past MaxLoadWait without room in MaxLoadingBytes a read is refused with
// ResourceExhausted; the read holding the room is unaffected.
func TestLoadRefusedWhenReadMemoryBusy(t *testing.T) {
	var gate *gateStore
	w, r, _ := writerAndReader(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store { gate = newGate(s); return gate },
		func(c *agent.Config) {
			c.MaxLoadingBytes = 6 << 10
			c.MaxLoadWait = 100 * time.Millisecond
		})
	produceFiles(t, w, "t", 2, 4<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := r.c.Fetch(ctx, "t", 0, 0, 0, 0)
		first <- err
	}()
	for gate.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.c.Fetch(ctx, "t", 1, 0, 0, 0); code(err) != codes.ResourceExhausted {
		t.Fatalf("fetch while the read memory is taken: %v, want ResourceExhausted", err)
	}
	close(gate.release)
	if err := <-first; err != nil {
		t.Fatalf("the read holding the memory: %v", err)
	}
	if _, err := r.c.Fetch(ctx, "t", 1, 0, 0, 0); err != nil {
		t.Fatalf("fetch once the memory is free: %v", err)
	}
}
