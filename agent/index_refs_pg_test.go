package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/objectstore"
)

// A subscription on one agent following records produced through another
// reads them without a FindBatches query each: the commit notices carry
// the batches. (Before, every commit of the other agent cost each of its
// readers one query.)
func TestReaderOnAnotherAgentNeedsNoQuery(t *testing.T) {
	dsn := testenv.Postgres(t)
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 2 * time.Millisecond
	acfg.PollInterval = time.Hour // only notices may wake readers
	a := startNode(t, openPostgres(t, dsn), store, acfg, bcfg)
	meta := &countingMeta{Store: openPostgres(t, dsn)}
	b := startNode(t, meta, store, acfg, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Only notices wake b's readers: wait until b follows them (its Run
	// subscribes asynchronously; a commit before that is never noticed).
	for !agent.FollowingNotices(b.ag) {
		if ctx.Err() != nil {
			t.Fatal("the other agent never followed the commit notices")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := a.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	got := make(chan *floev1.Record, 16)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		_ = b.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0},
			Start: &floev1.StartPosition{Position: &floev1.StartPosition_Offset{Offset: 0}}},
			func(r *floev1.SubscribeResponse) error {
				for _, rec := range r.GetRecords() {
					got <- rec
				}
				return nil
			})
	})
	const records = 10
	var before int64
	for i := range records {
		if i == 1 {
			before = meta.find.Load() // the first record: the reader settles
		}
		v := []byte(fmt.Sprint("r", i))
		if _, err := a.c.Produce(ctx, "t", 0, client.Value(nil, v)); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.GetOffset() != int64(i) || string(r.GetValue()) != string(v) {
				t.Fatalf("subscription got %v, want %s at %d", r, v, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the subscription on the other agent did not get record %d", i)
		}
	}
	if finds := meta.find.Load() - before; finds != 0 {
		t.Fatalf("%d FindBatches for %d records committed by the other agent, want none", finds, records-1)
	}
}
