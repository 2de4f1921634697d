package bench

import (
	"math"
	"testing"
	"time"
)

func TestHistogramSummary(t *testing.T) {
	h := NewHistogram()
	if s := h.Summary(); s != (Summary{}) || h.Distribution() != nil {
		t.Fatalf("empty histogram: %+v", s)
	}
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want*0.002+0.001 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if s.Count != 1000 {
		t.Fatalf("count %d", s.Count)
	}
	near("p50", s.P50Ms, 500)
	near("p90", s.P90Ms, 900)
	near("p99", s.P99Ms, 990)
	near("p99.9", s.P999Ms, 999)
	near("max", s.MaxMs, 1000)
	near("mean", s.MeanMs, 500.5)

	o := NewHistogram()
	o.RecordN(5*time.Second, 1000)
	h.Merge(o)
	if s := h.Summary(); s.Count != 2000 || math.Abs(s.MaxMs-5000) > 5 || s.P50Ms > 1001 {
		t.Fatalf("after merge: %+v", s)
	}
	// Out of range values are clamped, not dropped.
	h.Record(-time.Second)
	h.Record(2 * time.Hour)
	if h.Count() != 2002 || h.Quantile(1) < time.Hour-time.Minute {
		t.Fatalf("clamping: count %d, max %v", h.Count(), h.Quantile(1))
	}
}

func TestHistogramDistribution(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond * 100)
	}
	d := h.Distribution()
	if len(d) < 40 {
		t.Fatalf("%d points, want a point every tenth of a nine up to 4 nines", len(d))
	}
	for i := 1; i < len(d); i++ {
		if d[i].Percentile <= d[i-1].Percentile || d[i].Ms < d[i-1].Ms {
			t.Fatalf("not monotonic at %d: %+v then %+v", i, d[i-1], d[i])
		}
	}
	if last := d[len(d)-1]; math.Abs(last.Ms-1000) > 1 {
		t.Fatalf("last point %+v should be the max (1000 ms)", last)
	}
}
