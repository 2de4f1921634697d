package agent_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// tinyNode runs an agent on SQLite and memory whose gRPC server refuses to
// send a message over limit bytes, as a production server does.
func tinyNode(t *testing.T, limit int, mutate func(*agent.Config)) *node {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	acfg.PollInterval = 200 * time.Millisecond
	if mutate != nil {
		mutate(&acfg)
	}
	return startNode(t, meta, objectstore.NewMemory(), acfg, bcfg, grpc.MaxSendMsgSize(limit))
}

// produceEmpty appends n empty records to partition 0 of topic, in requests
// of per records each.
func produceEmpty(t *testing.T, n *node, topic string, total, per int) {
	t.Helper()
	ctx := context.Background()
	recs := make([]*floev1.Record, per)
	for i := range recs {
		recs[i] = &floev1.Record{}
	}
	for done := 0; done < total; done += per {
		if _, err := n.c.Produce(ctx, topic, 0, recs[:min(per, total-done)]...); err != nil {
			t.Fatalf("produce at %d: %v", done, err)
		}
	}
}

// A million empty records come back through Fetch and Subscribe in bounded
// pieces: no response exceeds the fetch budget (plus the response's own few
// fields), so none can exceed the send limit, and every record arrives once,
// in order. Before the budget counted each record's wire size, one Fetch
// answered with a whole batch of 50,000 records and hit the send limit.
func TestMillionEmptyRecordsFetchInBoundedPieces(t *testing.T) {
	const (
		total  = 1_000_000
		budget = 256 << 10
		limit  = budget + agent.ResponseOverhead
	)
	n := tinyNode(t, limit, func(c *agent.Config) {
		c.MaxFetchBytes = budget
		c.MaxFetchRecords = 1 << 30 // the byte budget alone must hold
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := n.c.CreateTopic(ctx, "tiny", 1, nil); err != nil {
		t.Fatal(err)
	}
	produceEmpty(t, n, "tiny", total, 50_000)

	one, err := n.c.Fetch(ctx, "tiny", 0, 0, 1, 0)
	if err != nil || len(one.GetRecords()) != 1 || one.GetNextOffset() != 1 {
		t.Fatalf("Fetch(max_bytes=1): %d records, next %d, %v; want exactly one", len(one.GetRecords()), one.GetNextOffset(), err)
	}

	largest, responses := 0, 0
	for off := int64(0); off < total; {
		f, err := n.c.Fetch(ctx, "tiny", 0, off, 0, 0)
		if err != nil {
			t.Fatalf("fetch at %d: %v", off, err)
		}
		size := proto.Size(f)
		if size > limit {
			t.Fatalf("fetch at %d: response of %d bytes, limit %d", off, size, limit)
		}
		largest, responses = max(largest, size), responses+1
		if len(f.GetRecords()) == 0 {
			t.Fatalf("fetch at %d: no records below the high watermark %d", off, f.GetHighWatermark())
		}
		for _, r := range f.GetRecords() {
			if r.GetOffset() != off {
				t.Fatalf("record at %d, want %d", r.GetOffset(), off)
			}
			off++
		}
		if f.GetNextOffset() != off {
			t.Fatalf("next offset %d, want %d", f.GetNextOffset(), off)
		}
	}
	t.Logf("fetch: %d records in %d responses, largest %d bytes (budget %d, send limit %d)", total, responses, largest, budget, limit)

	largest, responses = 0, 0
	next := int64(0)
	err = n.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "tiny",
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
		func(r *floev1.SubscribeResponse) error {
			size := proto.Size(r)
			if size > limit {
				t.Fatalf("subscription message of %d bytes, limit %d", size, limit)
			}
			largest, responses = max(largest, size), responses+1
			for _, rec := range r.GetRecords() {
				if rec.GetOffset() != next {
					t.Fatalf("subscription: record at %d, want %d", rec.GetOffset(), next)
				}
				next++
			}
			if next == total {
				return client.ErrStop
			}
			return nil
		})
	if err != nil {
		t.Fatalf("subscribe: %v after %d records", err, next)
	}
	t.Logf("subscribe: %d records in %d messages, largest %d bytes", total, responses, largest)
}

// MaxFetchRecords caps the records of a response whatever their size.
func TestFetchRecordCap(t *testing.T) {
	n := tinyNode(t, 4<<20, func(c *agent.Config) { c.MaxFetchRecords = 7 })
	ctx := context.Background()
	if _, err := n.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	produceEmpty(t, n, "t", 100, 100)
	for off := int64(0); off < 100; {
		f, err := n.c.Fetch(ctx, "t", 0, off, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(7, 100-off); int64(len(f.GetRecords())) != want {
			t.Fatalf("fetch at %d: %d records, want %d", off, len(f.GetRecords()), want)
		}
		off = f.GetNextOffset()
	}
}
