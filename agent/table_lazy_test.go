package agent_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/tableread"
)

// openOnly is an open catalog whose Close leaves the test's writer open.
type openOnly struct{ *iceberg.Writer }

func (openOnly) Close() error { return nil }

// TestReadBelowRawLogStartCatalogDown: an agent whose Iceberg catalog
// does not answer (a PostgreSQL nobody listens for) starts and serves
// raw reads; a read below the raw log start, and ListOffsets earliest,
// are Unavailable (retriable), never an answer; once the catalog answers
// the same reads are served from the table.
func TestReadBelowRawLogStartCatalogDown(t *testing.T) {
	e := newTableEnv(t)
	down := iceberg.DefaultPostgresConfig("postgres://floe:floe@"+testenv.DeadAddr+"/floe?connect_timeout=2", "nowhere")
	var up atomic.Bool
	var opens atomic.Int32
	lazy, err := tableread.NewLazy(func(ctx context.Context) (tableread.Catalog, error) {
		opens.Add(1)
		if up.Load() {
			return openOnly{e.w}, nil
		}
		return iceberg.Open(ctx, down, slog.New(slog.DiscardHandler))
	}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lazy.Close() })
	r, err := tableread.New(lazy, tableread.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := startKillable(t, e.meta, e.store, groupConfig(), agent.Options{Tables: r}).c
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n := opens.Load(); n != 0 {
		t.Fatalf("the agent opened the catalog %d times at start, want none (lazily)", n)
	}
	// Raw reads never touch the catalog.
	for p := range e.parts {
		resp, err := c.Fetch(ctx, e.topic, p, e.starts[p], 3000, 0)
		if err != nil || len(resp.GetRecords()) == 0 || resp.GetRecords()[0].GetOffset() != e.starts[p] {
			t.Fatalf("raw fetch of partition %d at %d with the catalog down: %v, %v", p, e.starts[p], resp, err)
		}
	}
	if n := opens.Load(); n != 0 {
		t.Fatalf("raw reads opened the catalog %d times, want none", n)
	}
	_, err = c.Fetch(ctx, e.topic, 0, 0, 3000, 0)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("fetch below the raw log start with the catalog down: %v, want Unavailable", err)
	}
	_, err = c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: e.topic, Spec: floev1.OffsetSpec_OFFSET_SPEC_EARLIEST})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("ListOffsets earliest with the catalog down: %v, want Unavailable", err)
	}
	// The catalog answers again: the next open (past the retry interval)
	// serves the table.
	up.Store(true)
	time.Sleep(20 * time.Millisecond)
	resp, err := c.Fetch(ctx, e.topic, 0, 0, 3000, 0)
	if err != nil || len(resp.GetRecords()) == 0 || resp.GetRecords()[0].GetOffset() != 0 ||
		string(resp.GetRecords()[0].GetValue()) != e.values[0][0] {
		t.Fatalf("fetch below the raw log start once the catalog is up: %v, %v", resp, err)
	}
}
