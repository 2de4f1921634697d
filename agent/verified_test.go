package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// Bytes count as verified (their batches' CRCs are not checked again in
// batches mode) only when they come from a whole file whose checksums held
// when it was loaded: a reader with a cache loads the small file whole
// (verified, and again from the cache), one without a cache reads it by
// ranges (not verified).
func TestReadRangeVerifiedOnlyForCheckedWholeFiles(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		cache int64
		want  bool
	}{{"whole file loaded and checked", 64 << 20, true}, {"ranged reads", 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			w, r, _ := writerAndReader(t, objectstore.NewMemory(), func(s objectstore.Store) objectstore.Store { return s },
				func(cfg *agent.Config) { cfg.CacheBytes = c.cache })
			produceFiles(t, w, "t", 1, 8<<10)
			for i := range 2 { // the load, then the cache
				v, err := agent.ReadRangeVerified(ctx, r.ag, "t", 0, 0, 1<<20)
				if err != nil || len(v) == 0 {
					t.Fatalf("read %d: %v, %v", i, v, err)
				}
				for j, got := range v {
					if got != c.want {
						t.Fatalf("read %d run %d: verified %v, want %v", i, j, got, c.want)
					}
				}
			}
		})
	}
}

// In batches mode a batch damaged where only its own CRC covers it, read
// by ranges (no whole-file check), is DataLoss: the per-batch CRC is kept
// for every byte not verified with its file.
func TestBatchesRangedCorruptBatchIsDataLoss(t *testing.T) {
	mem := objectstore.NewMemory()
	w, r, _ := writerAndReader(t, mem, func(s objectstore.Store) objectstore.Store { return s },
		func(cfg *agent.Config) { cfg.CacheBytes = 0 })
	produceFiles(t, w, "t", 1, 4<<10)
	ctx := context.Background()
	var key string
	if err := mem.List(ctx, "", func(o objectstore.ObjectInfo) error { key = o.Key; return nil }); err != nil || key == "" {
		t.Fatalf("find the stored file: %q, %v", key, err)
	}
	good, err := mem.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[logfile.HeaderSize+kbatch.HeaderSize+20] ^= 0x01 // inside the first batch's records
	if err := mem.Put(ctx, key, bad, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "t", Batches: true}); code(err) != codes.DataLoss {
		t.Fatalf("batches fetch of a damaged batch read by range: %v, want DataLoss", err)
	}
	if err := mem.Put(ctx, key, good, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if resp, err := r.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "t", Batches: true}); err != nil || len(resp.GetBatches()) == 0 {
		t.Fatalf("batches fetch of the repaired file: %d bytes, %v", len(resp.GetBatches()), err)
	}
}

// A batches-mode subscription builds each message in a pooled buffer that
// the sender gives back once the message is sent: over many small messages
// of several partitions at once (buffers reused again and again), every
// record arrives once, in order, with its bytes, as a per-record fetch
// returns it. A buffer given back before its message was sent would be
// overwritten by the next read.
func TestSubscribeBatchesPooledBuffersIntact(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const parts, rounds, per = 4, 30, 20
	if _, err := h.c.CreateTopic(ctx, "t", parts, nil); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		for p := int32(0); p < parts; p++ {
			recs := make([]*floev1.Record, per)
			for i := range recs {
				recs[i] = &floev1.Record{Key: []byte(fmt.Sprintf("p%d", p)), Value: bytes.Repeat([]byte{byte(r*per + i)}, 100+i)}
			}
			if _, err := h.c.Log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: recs}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[int32][]*floev1.Record{}
	for p := int32(0); p < parts; p++ {
		for off := int64(0); off < rounds*per; {
			f, err := h.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "t", Partition: p, Offset: off})
			if err != nil || len(f.GetRecords()) == 0 {
				t.Fatalf("fetch %d/%d: %v", p, off, err)
			}
			want[p] = append(want[p], f.GetRecords()...)
			off = f.GetRecords()[len(f.GetRecords())-1].GetOffset() + 1
		}
	}
	got, next, done := map[int32][]*floev1.Record{}, map[int32]int64{}, 0
	err := h.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0, 1, 2, 3}, Batches: true, MaxBytes: 1,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}, func(r *floev1.SubscribeResponse) error {
		p := r.GetPartition()
		recs, err := client.ResponseRecords(r, next[p])
		if err != nil {
			return err
		}
		got[p] = append(got[p], recs...)
		next[p] = r.GetNextOffset()
		if next[p] == rounds*per {
			if done++; done == parts {
				return client.ErrStop
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < parts; p++ {
		sameRecords(t, fmt.Sprintf("partition %d", p), got[p], want[p])
	}
}
