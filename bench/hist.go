package bench

import (
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, from 1 µs to 1 hour, with three
// significant digits.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 3
)

// Histogram is a concurrency-safe HDR histogram of latencies.
type Histogram struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histLowest, histHighest, histDigits)}
}

// Record adds one latency; values outside [1 µs, 1 h] are clamped.
func (h *Histogram) Record(d time.Duration) { h.RecordN(d, 1) }

// RecordN adds n observations of one latency.
func (h *Histogram) RecordN(d time.Duration, n int64) {
	us := min(max(int64(d/time.Microsecond), histLowest), histHighest)
	h.mu.Lock()
	_ = h.h.RecordValues(us, n)
	h.mu.Unlock()
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	o.mu.Lock()
	snap := hdrhistogram.Import(o.h.Export())
	o.mu.Unlock()
	h.mu.Lock()
	h.h.Merge(snap)
	h.mu.Unlock()
}

// Count is the number of observations.
func (h *Histogram) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h.TotalCount()
}

// Quantile returns the latency at quantile q in [0, 1].
func (h *Histogram) Quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Duration(h.h.ValueAtQuantile(q*100)) * time.Microsecond
}

// Summary is a latency distribution's headline figures, in milliseconds.
type Summary struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summary returns the headline figures; all zero for an empty histogram.
func (h *Histogram) Summary() Summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h.TotalCount() == 0 {
		return Summary{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Summary{
		Count:  h.h.TotalCount(),
		MeanMs: h.h.Mean() / 1000,
		P50Ms:  ms(h.h.ValueAtQuantile(50)),
		P90Ms:  ms(h.h.ValueAtQuantile(90)),
		P99Ms:  ms(h.h.ValueAtQuantile(99)),
		P999Ms: ms(h.h.ValueAtQuantile(99.9)),
		MaxMs:  ms(h.h.Max()),
	}
}

// Point is one point of a latency distribution: the latency (ms) under
// which Percentile percent of the observations fall.
type Point struct {
	Percentile float64 `json:"percentile"`
	Ms         float64 `json:"ms"`
}

// Distribution returns the latency at percentiles spaced evenly on a
// "nines" scale (0, 90, 99, 99.9, ...) up to the maximum, for plotting.
func (h *Histogram) Distribution() []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.h.TotalCount()
	if n == 0 {
		return nil
	}
	// Stop at the resolution the count allows: 1/n of the observations.
	maxNines := math.Log10(float64(n))
	var pts []Point
	for k := 0; ; k++ {
		nines := float64(k) / 10
		if nines > maxNines {
			break
		}
		p := 100 * (1 - math.Pow(10, -nines))
		v := h.h.ValueAtQuantile(p)
		if k == 0 {
			v = h.h.Min()
		}
		pts = append(pts, Point{Percentile: p, Ms: float64(v) / 1000})
	}
	// The maximum, plotted half a step past the last observation's rank.
	pts = append(pts, Point{Percentile: 100 * (1 - 0.5/float64(n)), Ms: float64(h.h.Max()) / 1000})
	return pts
}
