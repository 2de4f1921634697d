package kafka

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestCounts counts the requests the server has read, per API key
// (unsupported keys and versions included): floe_kafka_requests_total,
// and Server.Requests for tests that pin how often a client asks. One
// counter per key, resolved once (the last slot: keys kmsg does not know).
type requestCounts struct {
	vec *prometheus.CounterVec
	by  [kmsg.MaxKey + 2]prometheus.Counter
}

func newRequestCounts() *requestCounts {
	rc := &requestCounts{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_kafka_requests_total",
		Help: "Kafka requests read, by API (api=\"unknown\": a key floe does not know)."}, []string{"api"})}
	for key := range rc.by {
		name := "unknown"
		if key <= kmsg.MaxKey {
			name = kmsg.NameForKey(int16(key))
		}
		rc.by[key] = rc.vec.WithLabelValues(name)
	}
	return rc
}

func (rc *requestCounts) counter(key int16) prometheus.Counter {
	if key < 0 || int(key) > kmsg.MaxKey {
		key = kmsg.MaxKey + 1
	}
	return rc.by[key]
}

func (rc *requestCounts) add(key int16) { rc.counter(key).Inc() }

// Requests is how many requests of the API key the server has read.
func (s *Server) Requests(key kmsg.Key) uint64 {
	var m dto.Metric
	if err := s.requests.counter(key.Int16()).Write(&m); err != nil {
		return 0
	}
	return uint64(m.GetCounter().GetValue())
}
