package batcher_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// TestSealReasonsCounted: floe_batcher_seals_total counts each file under
// the reason it was sealed: its linger, its size, Flush, Close.
func TestSealReasonsCounted(t *testing.T) {
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	tp, err := meta.CreateTopic(ctx, metadata.TopicSpec{Name: "s", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := batcher.NewMetrics(reg)
	cfg := batcher.DefaultConfig()
	cfg.Linger, cfg.MaxFileBytes = 50*time.Millisecond, 4096
	b, err := batcher.New(cfg, objectstore.NewMemory(), meta, batcher.Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	count := func(reason string) float64 { return sealCount(t, reg, reason) }
	wait := func(p *batcher.Pending) {
		t.Helper()
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	appendOne := func(n int) *batcher.Pending {
		t.Helper()
		p, err := b.Append(ctx, tp.ID, 0, batch(t, n, "v"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	wait(appendOne(1))
	if got := count(batcher.SealLinger); got != 1 {
		t.Fatalf("linger seals %v, want 1", got)
	}
	// Batches of about 1.5 KiB: two or three fill a 4 KiB file.
	ps := []*batcher.Pending{appendOne(150), appendOne(150), appendOne(150)}
	for _, p := range ps {
		wait(p)
	}
	if got := count(batcher.SealSize); got < 1 {
		t.Fatalf("size seals %v, want at least 1", got)
	}
	p := appendOne(1)
	b.Flush()
	wait(p)
	if got := count(batcher.SealFlush); got != 1 {
		t.Fatalf("flush seals %v, want 1", got)
	}
	p = appendOne(1)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wait(p)
	if got := count(batcher.SealClose); got != 1 {
		t.Fatalf("close seals %v, want 1", got)
	}
}

// sealCount reads floe_batcher_seals_total{reason} from reg (-1: absent).
func sealCount(t testing.TB, reg prometheus.Gatherer, reason string) float64 {
	t.Helper()
	c, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range c {
		if f.GetName() != "floe_batcher_seals_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.GetLabel()[0].GetValue() == reason {
				return s.GetCounter().GetValue()
			}
		}
	}
	return -1
}
