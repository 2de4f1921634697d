package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
)

// TestAgentRowGRPCAddr: an agent's row names its gRPC listener in the
// grpc_addr column (an unspecified host replaced by the row's Kafka
// host), its id stays the bare process id, and an agent without a gRPC
// listener writes none.
func TestAgentRowGRPCAddr(t *testing.T) {
	for _, tc := range []struct{ name, listen, want string }{
		{"unspecified host", "0.0.0.0:7070", "10.9.9.9:7070"},
		{"own host", "10.1.1.1:7071", "10.1.1.1:7071"},
		{"no gRPC listener", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, func(c *kafka.Config) { c.GRPCAddr, c.AdvertisedHost = tc.listen, "10.9.9.9" })
			probe := metadata.AgentInfo{ID: "probe", Host: "10.0.0.1", Port: 9092}
			var row metadata.AgentInfo
			waitFor(t, "the broker's agent row", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				live, err := b.meta.BeatAgent(ctx, probe, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range live {
					if a.ID != probe.ID {
						row = a
						return true
					}
				}
				return false
			})
			if row.GRPCAddr != tc.want || strings.Contains(row.ID, " ") || row.Host != "10.9.9.9" {
				t.Fatalf("agent row %+v: want gRPC address %q in its own field, id without it", row, tc.want)
			}
			for _, a := range b.srv.LiveAgents() {
				if a.ID == row.ID && a.GRPCAddr != tc.want {
					t.Fatalf("LiveAgents() has %+v, want the row's gRPC address %q", a, tc.want)
				}
			}
		})
	}
}
