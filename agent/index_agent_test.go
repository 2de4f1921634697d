package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

func openSQLite(t *testing.T) metadata.Store {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	return meta
}

// subscribeAll subscribes to topic from offset 0 until the end of the test
// and returns the records it gets.
func subscribeAll(t *testing.T, ctx context.Context, n *node, topic string, parts []int32) <-chan *floev1.Record {
	got := make(chan *floev1.Record, 1024)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	offsets := make(map[int32]int64)
	for _, p := range parts {
		offsets[p] = 0
	}
	wg.Go(func() {
		_ = n.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: topic, Partitions: parts, Offsets: offsets},
			func(r *floev1.SubscribeResponse) error {
				for _, rec := range r.GetRecords() {
					got <- rec
				}
				return nil
			})
	})
	return got
}

func await(t *testing.T, got <-chan *floev1.Record, offset int64, value string) {
	t.Helper()
	select {
	case r := <-got:
		if r.GetOffset() != offset || string(r.GetValue()) != value {
			t.Fatalf("got %v, want %q at %d", r, value, offset)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("record %d did not arrive", offset)
	}
}

// A subscription tailing what its own agent commits reads the batches the
// index got from OnCommit: its wake-ups and re-checks cost (almost) no
// FindBatches, where each used to cost one.
func TestTailOfOwnCommitsCostsNoQuery(t *testing.T) {
	meta := &countingMeta{Store: openSQLite(t)}
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = time.Millisecond
	acfg.PollInterval = 20 * time.Millisecond // re-checks, each once a query
	n := startNode(t, meta, objectstore.NewMemory(), acfg, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := n.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	got := subscribeAll(t, ctx, n, "t", []int32{0})
	defer cancel()
	for meta.find.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	const records = 20
	start := meta.find.Load()
	for i := int64(0); i < records; i++ {
		v := fmt.Sprint("r", i)
		if _, err := n.c.Produce(ctx, "t", 0, client.Value(nil, []byte(v))); err != nil {
			t.Fatal(err)
		}
		await(t, got, i, v)
	}
	time.Sleep(200 * time.Millisecond) // ten idle re-checks
	finds := meta.find.Load() - start
	t.Logf("%d records tailed with %d FindBatches", records, finds)
	// A notice can overtake OnCommit and cost one query; never more.
	if finds > records/2 {
		t.Fatalf("%d FindBatches for %d records tailed, want (almost) none", finds, records)
	}
}

// deafMeta never delivers a commit notice.
type deafMeta struct{ metadata.Store }

func (deafMeta) Notices(ctx context.Context) (<-chan metadata.Notice, error) {
	ch := make(chan metadata.Notice)
	context.AfterFunc(ctx, func() { close(ch) })
	return ch, nil
}

// A commit whose notice was lost is found by the index's poll of the
// partition states, at IndexPollInterval, even with no reader polling.
func TestIndexPollFindsCommitWithoutNotice(t *testing.T) {
	meta := openSQLite(t)
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = time.Millisecond
	w := startNode(t, meta, store, acfg, bcfg)
	acfg.PollInterval = time.Hour
	acfg.IndexPollInterval = 100 * time.Millisecond
	r := startNode(t, deafMeta{meta}, store, acfg, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	got := subscribeAll(t, ctx, r, "t", []int32{0, 1})
	defer cancel()
	for i := int64(0); i < 3; i++ {
		time.Sleep(50 * time.Millisecond)
		v := fmt.Sprint("r", i)
		if _, err := w.c.Produce(ctx, "t", 1, client.Value(nil, []byte(v))); err != nil {
			t.Fatal(err)
		}
		await(t, got, i, v)
	}
}
