package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/tableread"
)

// TestTableBatchBuffersNotReusedWhileSent: batches rebuilt from the table
// share a buffer from the table reader's pool, which goes back to the
// pool once gRPC has written the answer (the read's holds), and is
// written over by later reads. Freed buffers are poisoned. Subscribers
// in batches mode read every partition from offset 0 over a small,
// fixed flow-control window, two at a time, slowly, so that answers wait
// in gRPC's send queue while other reads rebuild batches: a buffer handed
// back before its answer was written would reach the client as poison
// or as other records, and fail the batch CRC or the value check; Fetch
// in batches is checked the same way. (It fails when the agent hands the
// buffer back as soon as the read returns.)
func TestTableBatchBuffersNotReusedWhileSent(t *testing.T) {
	e := newTableEnv(t)
	e.produce(6, 100) // more of the table: many reads a partition
	e.age()
	e.produce(1, 25) // and a raw tail
	cfg := tableread.DefaultConfig()
	cfg.MaxBatchBytes = 8 << 10 // batches above grpcwire's copy threshold: referenced, not copied
	r, err := tableread.New(e.w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Poison()
	acfg := groupConfig()
	o := agenttest.Default()
	o.Agent, o.AgentOptions, o.ServerOptions = acfg, agent.Options{Tables: r}, agent.GRPCServerOptions(acfg, nil)
	a := agenttest.Start(t, e.meta, e.store, o)
	slow, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return a.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(16<<10), grpc.WithInitialConnWindowSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// check walks one answer's batches from next: each record due and as
	// produced.
	check := func(p int32, batches []byte, next int64) (int64, error) {
		_, err := client.WalkBatches(batches, next, 0, func(rec *kbatch.Record) error {
			if rec.Offset != next || string(rec.Value) != e.values[p][next] {
				return fmt.Errorf("partition %d: record %d (%.24q) where %d (%.24q) was due", p, rec.Offset, rec.Value, next, e.values[p][next])
			}
			next++
			return nil
		})
		return next, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for p := range e.parts {
		for _, c := range []*client.Client{a.Client, slow} {
			g.Go(func() error {
				next := int64(0)
				req := &floev1.SubscribeRequest{Topic: e.topic, Partitions: []int32{p}, Batches: true, MaxBytes: 64 << 10,
					Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}
				err := c.Subscribe(gctx, req, func(resp *floev1.SubscribeResponse) error {
					if c == slow {
						time.Sleep(5 * time.Millisecond)
					}
					var err error
					if next, err = check(p, resp.GetBatches(), next); err != nil {
						return err
					}
					if next == e.hws[p] {
						return client.ErrStop
					}
					return nil
				})
				if err != nil && !errors.Is(err, context.Canceled) {
					return err
				}
				if next != e.hws[p] {
					return fmt.Errorf("partition %d: read up to %d of %d", p, next, e.hws[p])
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for p := range e.parts {
		for off := int64(0); off < e.hws[p]; {
			resp, err := a.Client.Log.Fetch(ctx, &floev1.FetchRequest{Topic: e.topic, Partition: p, Offset: off, MaxBytes: 32 << 10, Batches: true})
			if err != nil {
				t.Fatal(err)
			}
			from := off
			if off, err = check(p, resp.GetBatches(), off); err != nil {
				t.Fatal(err)
			}
			if off != resp.GetNextOffset() || off == from {
				t.Fatalf("fetch partition %d from %d: read to %d, next_offset %d", p, from, off, resp.GetNextOffset())
			}
		}
	}
	if _, reused := r.BatchBuffers(); reused == 0 {
		t.Fatal("no rebuilt batch's buffer was reused: the race this test looks for never happened")
	}
}
