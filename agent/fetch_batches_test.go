package agent_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// A fetch in batches mode from the middle of a batch answers that batch
// whole, its base offset set to the log's, and the batches after it;
// batches wholly below the offset are left out. The stored file keeps its
// placeholder base offsets (the answer is a copy).
func TestFetchBatchesFromTheMiddle(t *testing.T) {
	var (
		mu        sync.Mutex // protects committed
		committed [][]byte   // the files the read cache holds
	)
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	c := startOnWith(t, meta, objectstore.NewMemory(), func(f batcher.CommittedFile) {
		mu.Lock()
		defer mu.Unlock()
		committed = append(committed, f.Data)
	})
	h := &harness{c: c}
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	// Three batches of 10, 5 and 7 records: offsets 0-9, 10-14, 15-21.
	for _, n := range []int{10, 5, 7} {
		var recs []*floev1.Record
		for i := range n {
			recs = append(recs, client.Value([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d-%d", n, i))))
		}
		if _, err := h.c.Produce(ctx, "t", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		offset int64
		bases  []int64
	}{{0, []int64{0, 10, 15}}, {3, []int64{0, 10, 15}}, {10, []int64{10, 15}}, {12, []int64{10, 15}}, {21, []int64{15}}} {
		resp, err := h.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "t", Offset: c.offset, Batches: true})
		if err != nil {
			t.Fatal(err)
		}
		var bases []int64
		if err := kbatch.Split(resp.GetBatches(), func(b []byte) error {
			info, err := kbatch.ParseInfo(b)
			bases = append(bases, info.BaseOffset)
			return err
		}); err != nil {
			t.Fatalf("from %d: %v", c.offset, err)
		}
		if fmt.Sprint(bases) != fmt.Sprint(c.bases) || resp.GetNextOffset() != 22 || resp.GetHighWatermark() != 22 || len(resp.GetRecords()) != 0 {
			t.Fatalf("from %d: batches at %v (want %v), next %d, hw %d", c.offset, bases, c.bases, resp.GetNextOffset(), resp.GetHighWatermark())
		}
		recs, err := client.DecodeBatches(resp.GetBatches(), 0, c.offset, 0)
		if err != nil {
			t.Fatal(err)
		}
		per, err := h.c.Fetch(ctx, "t", 0, c.offset, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, fmt.Sprintf("from %d", c.offset), recs, per.GetRecords())
	}
	// A budget of one byte still answers one whole batch.
	resp, err := h.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "t", Offset: 12, MaxBytes: 1, Batches: true})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := kbatch.ParseInfo(resp.GetBatches()); err != nil || info.BatchLength != len(resp.GetBatches()) || info.BaseOffset != 10 || resp.GetNextOffset() != 15 {
		t.Fatalf("one-byte budget: %+v %v, next %d", info, err, resp.GetNextOffset())
	}
	// The cached files (the committed files' buffers) still say base
	// offset 0: answers are copies.
	mu.Lock()
	found := false
	for _, data := range committed {
		i := bytes.Index(data, resp.GetBatches()[8:])
		found = found || i >= 8
		if i >= 8 && binary.BigEndian.Uint64(data[i-8:]) != 0 {
			t.Fatalf("cached batch has base offset %d: the answer wrote into the cache", binary.BigEndian.Uint64(data[i-8:]))
		}
	}
	mu.Unlock()
	if !found {
		t.Fatal("the fetched batch is in no committed file")
	}
	// Long poll at the high watermark answers nothing, with next = offset.
	resp, err = h.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "t", Offset: 22, MaxWaitMs: 10, Batches: true})
	if err != nil || len(resp.GetBatches()) != 0 || resp.GetNextOffset() != 22 {
		t.Fatalf("at the high watermark: %d bytes, next %d, %v", len(resp.GetBatches()), resp.GetNextOffset(), err)
	}
}

// Subscribe in batches mode streams stored batches with next_offset,
// history then live.
func TestSubscribeBatches(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	want := batchTestRecords()
	if _, err := h.c.Log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: new(int32), Records: want}); err != nil {
		t.Fatal(err)
	}
	var got []*floev1.Record
	next := int64(3)
	sent := false
	err := h.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0}, Batches: true,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Offset{Offset: 3}}}, func(r *floev1.SubscribeResponse) error {
		if len(r.GetRecords()) != 0 || len(r.GetBatches()) == 0 || r.GetNextOffset() <= next {
			t.Fatalf("message %v", r)
		}
		recs, err := client.ResponseRecords(r, next)
		if err != nil {
			return err
		}
		got = append(got, recs...)
		next = r.GetNextOffset()
		if !sent {
			sent = true
			b, err := client.EncodeBatch(want, floev1.Compression_COMPRESSION_GZIP, nil)
			if err != nil {
				return err
			}
			_, err = h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}})
			return err
		}
		if next == 10 {
			return client.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []*floev1.Record
	for round := range 2 {
		for i, r := range want {
			w := proto.Clone(r).(*floev1.Record)
			w.Offset = int64(round*len(want) + i)
			all = append(all, w)
		}
	}
	sameRecords(t, "subscribed", got, all[3:])
}

// A compacted topic (keyed compaction leaves gaps inside and between
// batches) read in batches mode gives the records the per-record read
// gives, by fetch from every offset and by subscribe.
func TestCompactedTopicInBatchesMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	store, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := startOn(t, meta, store)
	if _, err := c.CreateTopic(ctx, "keyed", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	const rounds, keys = 6, 5
	for r := range rounds {
		var recs []*floev1.Record
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			if k == 4 && r > 2 {
				key = "other"
			}
			recs = append(recs, client.Value([]byte(key), []byte(fmt.Sprintf("r%d", r))))
		}
		if _, err := c.Produce(ctx, "keyed", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	comp, err := compactor.New(meta, store, func() compactor.Config {
		cfg := compactor.DefaultConfig()
		cfg.Owner, cfg.MergeSmallBytes, cfg.CompactMinAge = "test", 0, 0
		return cfg
	}())
	if err != nil {
		t.Fatal(err)
	}
	if r, err := comp.RunOnce(ctx); err != nil || r.RecordsRemoved == 0 {
		t.Fatalf("compaction: %+v, %v", r, err)
	}
	const hw = rounds * keys
	per := fetchAll(t, c, "keyed", hw, false)
	if len(per) >= hw {
		t.Fatalf("%d records after compaction", len(per))
	}
	sameRecords(t, "batches mode", fetchAll(t, c, "keyed", hw, true), per)
	// From every offset, in gaps too.
	for off := int64(0); off < hw; off++ {
		resp, recs, err := c.FetchBatches(ctx, "keyed", 0, off, 0, 0)
		if err != nil {
			t.Fatalf("from %d: %v", off, err)
		}
		var want []*floev1.Record
		for _, r := range per {
			if r.GetOffset() >= off {
				want = append(want, r)
			}
		}
		if resp.GetNextOffset() != hw {
			t.Fatalf("from %d: next %d", off, resp.GetNextOffset())
		}
		sameRecords(t, fmt.Sprintf("from %d", off), recs, want)
	}
	var subscribed []*floev1.Record
	next := int64(0)
	err = c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "keyed", MaxBytes: 1, Batches: true,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
		func(r *floev1.SubscribeResponse) error {
			recs, err := client.ResponseRecords(r, next)
			if err != nil {
				return err
			}
			subscribed = append(subscribed, recs...)
			next = r.GetNextOffset()
			if next >= hw {
				return client.ErrStop
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, "subscribed in batches mode", subscribed, per)
}

// startOnWith is startOn with a hook seeing each committed file after the agent.
func startOnWith(t testing.TB, meta metadata.Store, store objectstore.Store, hook func(batcher.CommittedFile)) *client.Client {
	t.Helper()
	o := harnessOptions(nil)
	o.OnCommit = hook
	return agenttest.Start(t, meta, store, o).Client
}
