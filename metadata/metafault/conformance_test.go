package metafault_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// openWrapped is a fresh SQLite store behind the fault wrapper, with
// faults set by faults (nil: none).
func openWrapped(faults func(*metafault.Store)) func(t *testing.T) metadata.Store {
	return func(t *testing.T) metadata.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		inner, err := sqlite.Open(ctx, ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		s := metafault.Wrap(inner)
		if faults != nil {
			faults(s)
		}
		return s
	}
}

// TestConformance: with no fault set the wrapper is the store it wraps:
// it passes the whole metadata conformance suite (every method it
// forwards, Notices and Close included).
func TestConformance(t *testing.T) {
	metadatatest.Run(t, openWrapped(nil))
}

// TestConformanceWithLatency: latency on every operation (a slow
// database, each call still applied once) changes none of the suite's
// outcomes; the wrapper counts the calls it delayed.
func TestConformanceWithLatency(t *testing.T) {
	var wrapped []*metafault.Store
	metadatatest.Run(t, openWrapped(func(s *metafault.Store) {
		for _, op := range []metafault.Op{metafault.OpCommit, metafault.OpRead, metafault.OpTopics, metafault.OpInitProducer, metafault.OpPing} {
			s.Always(op, metafault.Fault{Mode: metafault.Pass, Latency: time.Millisecond})
		}
		wrapped = append(wrapped, s)
	}))
	calls := 0
	for _, s := range wrapped {
		calls += s.Calls(metafault.OpCommit) + s.Calls(metafault.OpRead) + s.Calls(metafault.OpTopics)
	}
	if calls == 0 {
		t.Fatal("the suite made no call through the wrapper")
	}
}
