package batcher_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// gatedCommitter holds the first commit call until open is closed, so
// that the files sealed meanwhile wait, uploaded, for the next commit.
type gatedCommitter struct {
	batcher.Committer
	first   atomic.Bool
	arrived chan struct{} // closed when the first call arrives
	open    chan struct{}
}

func newGate(c batcher.Committer) *gatedCommitter {
	return &gatedCommitter{Committer: c, arrived: make(chan struct{}), open: make(chan struct{})}
}

func (g *gatedCommitter) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	if g.first.CompareAndSwap(false, true) {
		close(g.arrived)
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, fmt.Errorf("gate: %w", ctx.Err())
		}
	}
	return g.Committer.CommitFiles(ctx, files)
}

// metricValue sums a counter's series, or returns a histogram's count and
// sum, from reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) (count, sum float64) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				count += float64(h.GetSampleCount())
				sum += h.GetSampleSum()
			} else {
				count += m.GetCounter().GetValue()
			}
		}
	}
	return count, sum
}

// awaitUploads waits until n uploads have ended and the commit goroutine
// can see their outcomes (floe_batcher_uploads_total counts an upload
// once its outcome is handed over).
func awaitUploads(t *testing.T, reg *prometheus.Registry, n float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got, _ := metricValue(t, reg, "floe_batcher_uploads_total"); got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v uploads did not end", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// gatedEnv is a batcher whose first commit call waits at a gate, on
// committer (fakeMeta when nil), with a registry for its metrics.
type gatedEnv struct {
	meta  *fakeMeta
	gate  *gatedCommitter
	store *objectstore.Faulty
	reg   *prometheus.Registry
	logs  *logCapture
	b     *batcher.Batcher
}

func newGatedEnv(t *testing.T, cfg batcher.Config, committer batcher.Committer) *gatedEnv {
	t.Helper()
	e := &gatedEnv{meta: newFakeMeta(), reg: prometheus.NewRegistry(), logs: &logCapture{}}
	if committer == nil {
		committer = e.meta
	}
	e.gate = newGate(committer)
	e.store = objectstore.WithFaults(objectstore.NewMemory(), objectstore.FaultConfig{})
	var err error
	e.b, err = batcher.New(cfg, e.store, e.gate, batcher.Options{Logger: slog.New(e.logs), Metrics: batcher.NewMetrics(e.reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.b.Close(context.Background()) })
	return e
}

// seal appends the batches (partition, records) to one file and seals it;
// once the first file's commit is at the gate, it waits for this file's
// upload too.
func (e *gatedEnv) seal(t *testing.T, topic int64, files int, batches ...[2]int) []*batcher.Pending {
	t.Helper()
	var ps []*batcher.Pending
	for _, pb := range batches {
		p, err := e.b.Append(context.Background(), topic, int32(pb[0]), batch(t, pb[1], fmt.Sprint("f", files)))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	e.b.Flush()
	if files == 1 {
		<-e.gate.arrived
	} else {
		awaitUploads(t, e.reg, float64(files))
	}
	return ps
}

// wantOffset fails unless p was committed at offset want.
func wantOffset(t *testing.T, what string, p *batcher.Pending, want int64) {
	t.Helper()
	r, err := p.Wait(context.Background())
	if err != nil || r.BaseOffset != want {
		t.Errorf("%s: offset %d, err %v; want offset %d", what, r.BaseOffset, err, want)
	}
}

// Files sealed and uploaded while a commit is in flight wait for the next
// commit, and all of them go into it (up to MaxFilesPerCommit), in seal
// order: offsets follow seal order per partition, each producer is
// answered with its own. A file whose upload failed is skipped (its
// producer fails definitely) without holding up the files after it, and a
// batch withdrawn before its commit stays out of it.
func TestWaitingFilesCommitTogether(t *testing.T) {
	for _, tc := range []struct {
		max   int
		calls int // after the first
	}{{16, 1}, {2, 2}, {1, 3}} {
		t.Run(fmt.Sprint("max", tc.max), func(t *testing.T) {
			cfg := manualConfig()
			cfg.MaxFilesPerCommit = tc.max
			e := newGatedEnv(t, cfg, nil)
			a := e.seal(t, 1, 1, [2]int{0, 2})
			b := e.seal(t, 1, 2, [2]int{0, 1}, [2]int{1, 3})
			e.store.Next(objectstore.OpPut, 1, objectstore.FaultError)
			c := e.seal(t, 1, 3, [2]int{1, 2})
			d := e.seal(t, 1, 4, [2]int{0, 4}, [2]int{1, 1})
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := d[1].Wait(ctx); !errors.Is(err, batcher.ErrWithdrawn) {
				t.Fatalf("withdrawing a batch before its commit: %v", err)
			}
			f := e.seal(t, 1, 5, [2]int{1, 1})
			close(e.gate.open)

			wantOffset(t, "file A", a[0], 0)
			wantOffset(t, "file B p0", b[0], 2)
			wantOffset(t, "file B p1", b[1], 0)
			_, err := c[0].Wait(context.Background())
			flushError(t, err, batcher.StageUpload, false)
			wantOffset(t, "file D p0", d[0], 3)
			wantOffset(t, "file E p1, after the withdrawn batch", f[0], 3)
			if h0, h1 := e.meta.highWatermark(1, 0), e.meta.highWatermark(1, 1); h0 != 7 || h1 != 4 {
				t.Fatalf("high watermarks %d, %d, want 7, 4", h0, h1)
			}
			calls := e.meta.callKeys()
			if len(calls) != 1+tc.calls {
				t.Fatalf("commit calls %q: want the first file's, then %d for the three files waiting", calls, tc.calls)
			}
			if n, sum := metricValue(t, e.reg, "floe_batcher_commit_files"); n != float64(1+tc.calls) || sum != 4 {
				t.Errorf("files per commit: %v commits of %v files, want %d of 4", n, sum, 1+tc.calls)
			}
			if errs := e.logs.errors(); len(errs) != 1 || errs[0].msg != "file upload failed" {
				t.Errorf("error logs %v: want the failed upload's only", errs)
			}
		})
	}
}

// A multi-file commit that hangs is retried until the deadline, and then
// every producer of every file in it hears that the outcome is unknown.
func TestHungMultiFileCommit(t *testing.T) {
	cfg := manualConfig()
	cfg.CommitTimeout = 400 * time.Millisecond
	cfg.MaxFilesPerCommit = 16
	e := newGatedEnv(t, cfg, nil)
	e.meta.next(1, commitPass) // the first file's
	e.meta.setAlways(commitHang)
	a := e.seal(t, 1, 1, [2]int{0, 1})
	b := e.seal(t, 1, 2, [2]int{0, 1})
	c := e.seal(t, 1, 3, [2]int{1, 1})
	close(e.gate.open)
	wantOffset(t, "file before the hung commit", a[0], 0)
	for _, p := range [][]*batcher.Pending{b, c} {
		_, err := p[0].Wait(context.Background())
		flushError(t, err, batcher.StageCommit, true)
	}
	calls := e.meta.callKeys()
	if len(calls) < 3 || strings.Count(calls[1], "+") != 1 {
		t.Fatalf("commit calls %q: want the first file's, then the two others together, retried", calls)
	}
	for _, c := range calls[2:] {
		if c != calls[1] {
			t.Fatalf("commit calls %q: a retry is not the same set", calls)
		}
	}
	if errs := e.logs.errors(); len(errs) != 2 {
		t.Fatalf("error logs %v: want one per file of the hung commit", errs)
	}
}
