package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

func TestProbeStore(t *testing.T) {
	store := objectstore.NewMemory()
	res, err := ProbeStore(context.Background(), store, "memory", 64<<10, 2, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Put.Ops == 0 || res.Get.Ops == 0 || res.Put.MBPerSec <= 0 || res.Get.Latency.Count != res.Get.Ops {
		t.Fatalf("probe measured nothing: %+v", res)
	}
	// The probe's objects are removed afterwards.
	left := 0
	if err := store.List(context.Background(), "", func(objectstore.ObjectInfo) error { left++; return nil }); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d probe objects left behind", left)
	}
	if _, err := ProbeStore(context.Background(), store, "memory", 0, 1, time.Second); err == nil {
		t.Fatal("object size 0 accepted")
	}
}

func TestProbeCommitSQLite(t *testing.T) {
	ctx := context.Background()
	c, err := OpenSQLiteCommitter(ctx, filepath.Join(t.TempDir(), "probe.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := ProbeCommit(ctx, c, "SQLite", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits < 10 || res.Latency.Count != res.Commits || res.Latency.P50Ms <= 0 {
		t.Fatalf("commit probe: %+v", res)
	}
}

func TestReadProcStat(t *testing.T) {
	ps, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ps.RSSBytes < 1<<20 || ps.CPUSeconds < 0 {
		t.Fatalf("implausible figures for this process: %+v", ps)
	}
	if _, err := ReadProcStat(1 << 30); err == nil {
		t.Fatal("a missing process read without error")
	}
}

func TestProgressLines(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&syncWriter{b: &b}, false)
	live := &Counters{}
	live.Sent.Add(10)
	live.Acked.Add(7)
	now := time.Now()
	p.Begin("floe produce", now, now.Add(time.Second), live)
	p.End()
	p.Note("a note %d", 1)
	out := b.String()
	if !strings.Contains(out, "floe produce [") || !strings.Contains(out, "sent 10 acked 7") || !strings.HasSuffix(out, "a note 1\n") {
		t.Fatalf("progress output:\n%s", out)
	}
	if strings.Contains(out, "\r") {
		t.Fatal("a non-terminal got carriage returns")
	}
	var tb strings.Builder
	tp := NewProgress(&syncWriter{b: &tb}, true)
	tp.BeginCount("read", 100, live, func() int64 { return 50 })
	time.Sleep(300 * time.Millisecond)
	tp.End()
	if !strings.Contains(tb.String(), "\r") || !strings.Contains(tb.String(), " 50%") {
		t.Fatalf("terminal progress output: %q", tb.String())
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
