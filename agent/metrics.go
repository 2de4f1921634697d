package agent

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

type metrics struct {
	produceLatency *prometheus.HistogramVec
	records        prometheus.Counter
	bytes          prometheus.Counter
	fetchedRecords prometheus.Counter
	cacheHits      prometheus.Counter
	cacheMisses    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		produceLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "floe_produce_duration_seconds", Help: "Produce request latency until acknowledgement, by gRPC code.",
			// Four buckets per doubling (as the batcher's): the p99 of a
			// linger-bound produce must not read as the next power of two.
			Buckets: prometheus.ExponentialBucketsRange(0.001, 16.384, 57)}, []string{"code"}),
		records: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_produced_records_total", Help: "Records acknowledged."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_produced_bytes_total", Help: "Record bytes (key, value, headers) acknowledged."}),
		fetchedRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_fetched_records_total", Help: "Records returned by fetches and subscriptions."}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_read_cache_hits_total", Help: "File reads served from the read cache."}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_read_cache_misses_total", Help: "File reads that went to the object store."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.produceLatency, m.records, m.bytes, m.fetchedRecords, m.cacheHits, m.cacheMisses} {
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

func (m *metrics) produced(n, bytes int, d time.Duration, err error) {
	m.produceLatency.WithLabelValues(status.Code(err).String()).Observe(d.Seconds())
	if err == nil {
		m.records.Add(float64(n))
		m.bytes.Add(float64(bytes))
	}
}

func (m *metrics) fetched(n int) { m.fetchedRecords.Add(float64(n)) }
func (m *metrics) cacheHit()     { m.cacheHits.Inc() }
func (m *metrics) cacheMiss()    { m.cacheMisses.Inc() }
