package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// zcValue is the value of the record at offset off of partition p: a
// reader can tell each record's bytes from any other's.
func zcValue(p int32, off int64) []byte {
	head := fmt.Sprintf("p%d-o%08d|", p, off)
	return append([]byte(head), bytes.Repeat([]byte{byte(off)}, 700-len(head))...)
}

// TestZeroCopyBuffersNotReusedWhileSent races subscriptions that send
// stored batches straight from the read cache's file buffers (the
// agent's own uploads, through the zero-copy codec) against eviction from
// a read cache two files large and the batcher reusing evicted buffers
// for new files. Freed buffers are poisoned. The subscribers read slowly
// over a small flow-control window, so answers wait in gRPC's send queue
// while their files are evicted and new files are written: a buffer
// reused while an answer still referenced it would reach the client as
// poison or as another file's bytes, and fail the batch CRC or the value
// check; Fetch answers are checked the same way. (It fails when readpath.Buf's holds are dropped as soon as the
// answer is built instead of once gRPC has written it.)
func TestZeroCopyBuffersNotReusedWhileSent(t *testing.T) {
	const (
		parts    = 4
		rounds   = 60
		perRound = 8 // 8 × 700 B per produce call: batches past grpcwire's copy threshold
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 2 * time.Millisecond
	bcfg.MaxFileBytes = 16 << 10
	acfg.CacheBytes = 2 * int64(bcfg.MaxFileBytes)
	acfg.PollInterval = 50 * time.Millisecond
	n := startNode(t, meta, objectstore.NewMemory(), acfg, bcfg, agent.GRPCServerOptions(acfg, nil)...)
	agent.PoisonReadCache(n.ag)
	if _, err := n.c.CreateTopic(ctx, "zc", parts, nil); err != nil {
		t.Fatal(err)
	}
	// A second connection with a small, fixed window (no BDP growth).
	slow, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return n.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(16<<10), grpc.WithInitialConnWindowSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()

	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex // protects checked
	checked := 0
	for p := int32(0); p < parts; p++ {
		g.Go(func() error { // producer
			for r := 0; r < rounds; r++ {
				recs := make([]*floev1.Record, perRound)
				for i := range recs {
					recs[i] = client.Value(nil, zcValue(p, int64(r*perRound+i)))
				}
				if _, err := n.c.Produce(gctx, "zc", p, recs...); err != nil {
					return fmt.Errorf("produce p%d round %d: %w", p, r, err)
				}
			}
			return nil
		})
		for _, c := range []*client.Client{n.c, slow} {
			g.Go(func() error { // subscriber in batches mode
				var pause time.Duration
				if c == slow {
					pause = 10 * time.Millisecond
				}
				return subscribeZC(gctx, c, "zc", p, rounds*perRound, 64<<10, pause, func() {
					mu.Lock()
					checked++
					mu.Unlock()
				})
			})
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// The unary Fetch answers through the same codec (grpcwire.FetchAnswer).
	for p := int32(0); p < parts; p++ {
		for off := int64(0); off < rounds*perRound; {
			resp, err := n.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "zc", Partition: p, Offset: off, MaxBytes: 20 << 10, Batches: true})
			if err != nil {
				t.Fatal(err)
			}
			from := off
			if _, err := client.WalkBatches(resp.GetBatches(), from, 0, func(r *kbatch.Record) error {
				if r.Offset != off || !bytes.Equal(r.Value, zcValue(p, r.Offset)) {
					return fmt.Errorf("fetch p%d: record %d (%.16q) where %d was due", p, r.Offset, r.Value, off)
				}
				off++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if off != resp.GetNextOffset() || off == from {
				t.Fatalf("fetch p%d from %d: read to %d, next_offset %d", p, from, off, resp.GetNextOffset())
			}
		}
	}
	handed := agent.ReadCacheHandedBack(n.ag)
	t.Logf("%d messages checked; %d file buffers handed back to the batcher", checked, handed)
	if handed == 0 {
		t.Fatal("no file buffer went back to the batcher: the race this test looks for never happened")
	}
}

// subscribeZC reads partition p of topic from the earliest offset in
// batches mode until total records have come, checking that each is due
// and holds its zcValue; it sleeps pause before each message (a slow
// reader) and calls onMsg after checking it.
func subscribeZC(ctx context.Context, c *client.Client, topic string, p int32, total int64, maxBytes int32, pause time.Duration, onMsg func()) error {
	next := int64(0)
	req := &floev1.SubscribeRequest{Topic: topic, Partitions: []int32{p}, Batches: true, MaxBytes: maxBytes,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}
	err := c.Subscribe(ctx, req, func(resp *floev1.SubscribeResponse) error {
		time.Sleep(pause)
		if _, err := client.WalkBatches(resp.GetBatches(), next, 0, func(r *kbatch.Record) error {
			if r.Offset != next {
				return fmt.Errorf("p%d: record %d where %d was due", p, r.Offset, next)
			}
			if want := zcValue(p, r.Offset); !bytes.Equal(r.Value, want) {
				return fmt.Errorf("p%d offset %d: value %.24q, want %.24q", p, r.Offset, r.Value, want)
			}
			next++
			return nil
		}); err != nil {
			return err
		}
		if onMsg != nil {
			onMsg()
		}
		if next == total {
			return client.ErrStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if next != total {
		return fmt.Errorf("p%d: read up to %d of %d", p, next, total)
	}
	return nil
}
