package agent

import (
	"fmt"
	"time"
)

// validateGRPC checks the gRPC edge's settings.
func (c Config) validateGRPC() error {
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"GRPCMaxConnectionIdle", c.GRPCMaxConnectionIdle}, {"GRPCMaxConnectionAge", c.GRPCMaxConnectionAge},
		{"GRPCMaxConnectionAgeGrace", c.GRPCMaxConnectionAgeGrace}, {"GRPCKeepaliveTime", c.GRPCKeepaliveTime},
		{"GRPCKeepaliveTimeout", c.GRPCKeepaliveTimeout}, {"GRPCKeepaliveMinTime", c.GRPCKeepaliveMinTime},
	}
	for _, d := range durations {
		if d.d < 0 {
			return fmt.Errorf("agent: config %s %v must not be negative", d.name, d.d)
		}
	}
	switch {
	case c.GRPCMaxRecvInFlightBytes < int64(c.MaxRecvMsgBytes()):
		return fmt.Errorf("agent: config GRPCMaxRecvInFlightBytes %d must be at least one request on the wire (%d: MaxRequestBytes plus a margin)",
			c.GRPCMaxRecvInFlightBytes, c.MaxRecvMsgBytes())
	case c.MaxConnections < 0:
		return fmt.Errorf("agent: config MaxConnections %d must not be negative", c.MaxConnections)
	}
	return nil
}
