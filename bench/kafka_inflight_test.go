package bench

import (
	"strings"
	"testing"
)

func TestKafkaConfigMaxInFlight(t *testing.T) {
	base := KafkaConfig{Name: "k", Brokers: []string{"127.0.0.1:1"}, RecordSize: 1024, MaxBuffered: 10}
	for _, n := range []int{0, 1, 5} {
		c := base
		c.MaxInFlight = n
		if err := c.validate(); err != nil {
			t.Errorf("MaxInFlight %d refused: %v", n, err)
		}
	}
	for _, n := range []int{-1, 6} {
		c := base
		c.MaxInFlight = n
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "MaxInFlight") {
			t.Errorf("MaxInFlight %d: %v, want a refusal naming the field", n, err)
		}
	}
}

func TestKafkaProducerPipelined(t *testing.T) {
	// franz-go refuses more than one request in flight with idempotence
	// on: MaxInFlight above 1 must turn it off for the client to start
	// (no broker needed: the options are checked when the client is made).
	for _, n := range []int{1, 5} {
		cfg := KafkaConfig{Name: "k", Brokers: []string{"127.0.0.1:1"}, RecordSize: 1024, MaxBuffered: 10, MaxInFlight: n}
		s, err := NewKafkaSystem(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.NewProducer(t.Context(), 0)
		if err != nil {
			t.Fatalf("MaxInFlight %d: %v", n, err)
		}
		p.(*kafkaProducer).cl.Close()
		s.Close()
	}
}
