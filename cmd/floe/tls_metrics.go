package main

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/internal/tlsconf"
)

// tlsMetrics export each TLS listener's certificate expiry and failed
// reloads, read at scrape time (a scrape may reload changed files, as a
// handshake would).
type tlsMetrics struct {
	expiry, failed *prometheus.Desc

	mu      sync.Mutex // protects servers
	servers map[string]*tlsconf.Server
}

// newTLSMetrics registers the collector with reg.
func newTLSMetrics(reg prometheus.Registerer) *tlsMetrics {
	m := &tlsMetrics{
		expiry: prometheus.NewDesc("floe_tls_certificate_expiry_timestamp_seconds",
			"When the certificate a TLS listener presents expires (Unix time): alert well before it", []string{"listener"}, nil),
		failed: prometheus.NewDesc("floe_tls_reload_failures_total",
			"Changed certificate files of a TLS listener that did not load; the previous certificate kept serving", []string{"listener"}, nil),
		servers: map[string]*tlsconf.Server{},
	}
	reg.MustRegister(m)
	return m
}

// add exports listener's TLS (nothing for nil: a plaintext listener).
func (m *tlsMetrics) add(listener string, s *tlsconf.Server) {
	if m == nil || s == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers[listener] = s
}

func (m *tlsMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.expiry
	ch <- m.failed
}

func (m *tlsMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, s := range m.servers {
		ch <- prometheus.MustNewConstMetric(m.expiry, prometheus.GaugeValue, float64(s.Certificate().NotAfter.Unix()), name)
		ch <- prometheus.MustNewConstMetric(m.failed, prometheus.CounterValue, float64(s.FailedReloads()), name)
	}
}
