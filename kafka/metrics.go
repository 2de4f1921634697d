package kafka

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics exports what the server holds: the bytes its
// connections buffer (Config.MaxBufferedBytes bounds each connection) and
// its fetch sessions. Read when scraped, never kept.
func (s *Server) registerMetrics(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	sessions := func(f func(FetchSessionStats) float64) func() float64 {
		return func() float64 { return f(s.sessions.snapshot()) }
	}
	for _, c := range []prometheus.Collector{
		s.requests.vec,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_kafka_buffered_bytes",
			Help: "Bytes the Kafka connections hold: request frames not yet answered and records of responses not yet written (each connection at most kafka.max_buffered_bytes of each)."},
			func() float64 { return float64(s.BufferedBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_kafka_fetch_sessions",
			Help: "Kafka fetch sessions (KIP-227) open on this agent (at most kafka.max_fetch_sessions)."},
			sessions(func(st FetchSessionStats) float64 { return float64(st.Open) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "floe_kafka_fetch_session_partitions",
			Help: "Partitions over every open Kafka fetch session."},
			sessions(func(st FetchSessionStats) float64 { return float64(st.Partitions) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "floe_kafka_fetch_session_evictions_total",
			Help: "Kafka fetch sessions evicted to make room for new ones (kafka.max_fetch_sessions reached)."},
			sessions(func(st FetchSessionStats) float64 { return float64(st.Evicted) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "floe_kafka_incremental_fetches_total",
			Help: "Incremental Kafka fetches served (a session's fetches after its first)."},
			sessions(func(st FetchSessionStats) float64 { return float64(st.Incremental) })),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("kafka: register metrics (one Kafka server per registry): %w", err)
		}
	}
	return nil
}
