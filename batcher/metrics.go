package batcher

import (
	"errors"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the batcher's Prometheus collectors. A nil *Metrics records nothing.
type Metrics struct {
	flushes       prometheus.Counter
	flushBytes    prometheus.Histogram
	flushBatches  prometheus.Histogram
	flushParts    prometheus.Histogram
	flushLatency  prometheus.Histogram
	uploads       *prometheus.CounterVec
	uploadSeconds prometheus.Histogram
	commits       *prometheus.CounterVec
	commitSeconds prometheus.Histogram
	commitFileN   prometheus.Histogram
	bufferedBytes prometheus.Gauge
	backpressured prometheus.Counter
	seals         *prometheus.CounterVec
	fileBuffers   *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them on reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		flushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_batcher_flushes_total", Help: "Files flushed: uploaded and committed."}),
		flushBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_batcher_flush_bytes", Help: "Size of flushed files.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 10)}),
		flushBatches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_batcher_flush_batches", Help: "Record batches per flushed file.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		flushParts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_batcher_flush_partitions", Help: "Distinct partitions per flushed file.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		flushLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_batcher_flush_duration_seconds", Help: "From seal to commit of a file.",
			Buckets: latencyBuckets(0.001, 8.192)}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_batcher_uploads_total", Help: "File uploads by result."}, []string{"result"}),
		uploadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_batcher_upload_duration_seconds", Help: "File upload time, retries included.",
			Buckets: latencyBuckets(0.001, 8.192)}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_metadata_commits_total", Help: "Commit calls to the metadata store (each of one or more files, retries included) by result."}, []string{"result"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_metadata_commit_duration_seconds", Help: "Commit call time (one or more files).",
			Buckets: latencyBuckets(0.0005, 4.096)}),
		commitFileN: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_batcher_commit_files", Help: "Files per metadata commit (one transaction, retries not counted).",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}}),
		bufferedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "floe_batcher_buffered_bytes", Help: "Bytes accepted and not yet acknowledged."}),
		backpressured: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_batcher_backpressure_total", Help: "Produce calls that had to wait for buffer space."}),
		seals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_batcher_seals_total", Help: "Files sealed for upload, by reason: linger, size, waited (every client writing to it waited on it), flush, close."}, []string{"reason"}),
		fileBuffers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_batcher_file_buffers_total", Help: "File buffers taken for sealed files: reused (an idle one that fits) or new (allocated, its pages zeroed and faulted in)."}, []string{"source"}),
	}
	for _, r := range []string{SealLinger, SealSize, SealWaited, SealFlush, SealClose} {
		m.seals.WithLabelValues(r) // every reason exported from the start
	}
	m.fileBuffers.WithLabelValues("reused")
	m.fileBuffers.WithLabelValues("new")
	if reg != nil {
		for _, c := range []prometheus.Collector{m.flushes, m.flushBytes, m.flushBatches, m.flushParts, m.flushLatency,
			m.uploads, m.uploadSeconds, m.commits, m.commitSeconds, m.commitFileN, m.bufferedBytes, m.backpressured, m.seals, m.fileBuffers} {
			if err := reg.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					panic(err)
				}
			}
		}
	}
	return m
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

func (m *Metrics) flush(bytes, batches, partitions int, d time.Duration) {
	if m == nil {
		return
	}
	m.flushes.Inc()
	m.flushBytes.Observe(float64(bytes))
	m.flushBatches.Observe(float64(batches))
	m.flushParts.Observe(float64(partitions))
	m.flushLatency.Observe(d.Seconds())
}

func (m *Metrics) upload(d time.Duration, _ int, err error) {
	if m == nil {
		return
	}
	m.uploads.WithLabelValues(result(err)).Inc()
	m.uploadSeconds.Observe(d.Seconds())
}

func (m *Metrics) commit(d time.Duration, err error) {
	if m == nil {
		return
	}
	m.commits.WithLabelValues(result(err)).Inc()
	m.commitSeconds.Observe(d.Seconds())
}

func (m *Metrics) commitFiles(n int) {
	if m == nil {
		return
	}
	m.commitFileN.Observe(float64(n))
}

func (m *Metrics) buffered(delta int64) {
	if m == nil {
		return
	}
	m.bufferedBytes.Add(float64(delta))
}

func (m *Metrics) backpressure() {
	if m == nil {
		return
	}
	m.backpressured.Inc()
}

func (m *Metrics) seal(reason string) {
	if m == nil {
		return
	}
	m.seals.WithLabelValues(reason).Inc()
}

// latencyBuckets are four buckets per doubling from lo to hi: a p99 read
// from them (histogram_quantile, the harness's breakdown) is off by at most
// a fifth, where buckets that double could put a 280 ms p99 at 500 ms.
func latencyBuckets(lo, hi float64) []float64 {
	return prometheus.ExponentialBucketsRange(lo, hi, 4*int(math.Round(math.Log2(hi/lo)))+1)
}

func (m *Metrics) fileBuffer(reused bool) {
	if m == nil {
		return
	}
	if reused {
		m.fileBuffers.WithLabelValues("reused").Inc()
	} else {
		m.fileBuffers.WithLabelValues("new").Inc()
	}
}
