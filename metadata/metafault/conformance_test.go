package metafault_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// innerStore opens the store the wrapper wraps, closed by the wrapper's
// Close (the suite closes what it opens).
type innerStore func(t *testing.T, ctx context.Context) (metadata.Store, error)

// sqliteInner is a fresh in-memory SQLite store.
func sqliteInner(_ *testing.T, ctx context.Context) (metadata.Store, error) {
	return sqlite.Open(ctx, ":memory:")
}

// postgresInner is a store on a fresh database of the test PostgreSQL
// server (internal/testenv: a missing server fails the test).
func postgresInner(t *testing.T, ctx context.Context) (metadata.Store, error) {
	return postgres.Open(ctx, testenv.Postgres(t), postgres.DefaultOptions())
}

// openWrapped is a fresh store from inner behind the fault wrapper, with
// faults set by faults (nil: none).
func openWrapped(inner innerStore, faults func(*metafault.Store)) func(t *testing.T) metadata.Store {
	return func(t *testing.T) metadata.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		in, err := inner(t, ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := metafault.Wrap(in)
		if faults != nil {
			faults(s)
		}
		return s
	}
}

// TestConformance: with no fault set the wrapper is the store it wraps:
// it passes the whole metadata conformance suite (every method it
// forwards, Notices and Close included), on SQLite and on PostgreSQL.
func TestConformance(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { metadatatest.Run(t, openWrapped(sqliteInner, nil)) })
	t.Run("postgres", func(t *testing.T) {
		testenv.PostgresAdminURL(t) // start the server before the suite's leak checks begin
		metadatatest.Run(t, openWrapped(postgresInner, nil))
	})
}

// TestConformanceWithLatency: latency on every operation (a slow
// database, each call still applied once) changes none of the suite's
// outcomes, on SQLite and on PostgreSQL; the wrapper counts the calls it
// delayed.
func TestConformanceWithLatency(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inner innerStore
	}{{"sqlite", sqliteInner}, {"postgres", postgresInner}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "postgres" {
				testenv.PostgresAdminURL(t)
			}
			var wrapped []*metafault.Store
			metadatatest.Run(t, openWrapped(tc.inner, func(s *metafault.Store) {
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
		})
	}
}
