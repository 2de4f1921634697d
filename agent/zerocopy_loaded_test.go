package agent_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// TestZeroCopyLoadedBuffersNotReusedWhileSent is
// TestZeroCopyBuffersNotReusedWhileSent for files an agent loads from the
// object store (a cold read cache: another agent wrote them): each load
// reads into a buffer of the loader's pool, that evicted files' buffers
// return to once their last reader has let go. The read cache holds two
// files, freed buffers are poisoned, and slow subscribers keep answers
// queued in gRPC while their files are evicted and their buffers taken by
// the next loads: a buffer reused while an answer (or a reader that
// joined a load) still referenced it would reach a client as poison or
// as another file's bytes.
func TestZeroCopyLoadedBuffersNotReusedWhileSent(t *testing.T) {
	const (
		parts    = 4
		rounds   = 40
		perRound = 8
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 2 * time.Millisecond
	bcfg.MaxFileBytes = 16 << 10
	acfg.PollInterval = 50 * time.Millisecond
	w := startNode(t, meta, store, acfg, bcfg)
	if _, err := w.c.CreateTopic(ctx, "zcl", parts, nil); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	for p := int32(0); p < parts; p++ {
		g.Go(func() error {
			for r := 0; r < rounds; r++ {
				recs := make([]*floev1.Record, perRound)
				for i := range recs {
					recs[i] = client.Value(nil, zcValue(p, int64(r*perRound+i)))
				}
				if _, err := w.c.Produce(gctx, "zcl", p, recs...); err != nil {
					return fmt.Errorf("produce p%d round %d: %w", p, r, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	rcfg := acfg
	rcfg.CacheBytes = 2 * int64(bcfg.MaxFileBytes)
	r := startNode(t, meta, store, rcfg, bcfg, agent.GRPCServerOptions(rcfg, nil)...)
	agent.PoisonReadCache(r.ag)
	slow, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return r.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(16<<10), grpc.WithInitialConnWindowSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	g, gctx = errgroup.WithContext(ctx)
	for p := int32(0); p < parts; p++ {
		for _, c := range []*client.Client{r.c, slow} {
			g.Go(func() error {
				var pause time.Duration
				if c == slow {
					pause = 5 * time.Millisecond
				}
				return subscribeZC(gctx, c, "zcl", p, rounds*perRound, 8<<10, pause, nil)
			})
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	handed, reused := agent.ReadCacheHandedBack(r.ag), agent.ReadBuffersReused(r.ag)
	t.Logf("%d loaded file buffers handed back, %d loads into a reused buffer", handed, reused)
	if handed == 0 || reused == 0 {
		t.Fatal("no loaded file's buffer was handed back and reused: the race this test looks for never happened")
	}
}
