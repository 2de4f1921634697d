package client_test

import (
	"context"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
)

// TestSubscribeLentReadsEveryRecord: with lent answers (their receive
// buffers reused once fn returns) every record is read once, in offset
// order, with its own value, through Client.SubscribeLent and through
// SubscribeAffinityBatches with Lend; answers of up to 64 KiB span several
// HTTP/2 frames, so their buffers are the codec's pooled ones.
func TestSubscribeLentReadsEveryRecord(t *testing.T) {
	const perPart = 3000
	_, boot, _ := readAffinitySetup(t, perPart)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := func() *floev1.SubscribeRequest {
		return &floev1.SubscribeRequest{Topic: "t", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}},
			MaxBytes: 64 << 10, Batches: true}
	}
	walk := func(r *reader, resp *floev1.SubscribeResponse, from int64) error {
		p := resp.GetPartition()
		_, err := client.WalkBatches(resp.GetBatches(), max(from, r.next[p]), 0, func(kr *kbatch.Record) error {
			return r.record(p, kr.Offset, kr.Value)
		})
		if err == nil && r.total == readParts*perPart {
			return client.ErrStop
		}
		return err
	}

	direct := &reader{next: map[int32]int64{}}
	parts := make([]int32, readParts)
	for p := range parts {
		parts[p] = int32(p)
	}
	dreq := req()
	dreq.Partitions = parts
	if err := boot.SubscribeLent(ctx, dreq, func(resp *floev1.SubscribeResponse) error { return walk(direct, resp, 0) }); err != nil {
		t.Fatalf("SubscribeLent: %v", err)
	}

	router, err := client.NewRouter(ctx, boot, "t", client.RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	routed := &reader{next: map[int32]int64{}}
	if err := client.SubscribeAffinityBatches(ctx, router, req(), client.ResumeOptions{Lend: true},
		func(resp *floev1.SubscribeResponse, from int64) error { return walk(routed, resp, from) }); err != nil {
		t.Fatalf("SubscribeAffinityBatches with Lend: %v", err)
	}
	for p := range readParts {
		if direct.next[int32(p)] != perPart || routed.next[int32(p)] != perPart {
			t.Fatalf("partition %d: read up to %d (SubscribeLent) and %d (affinity), want %d", p, direct.next[int32(p)], routed.next[int32(p)], perPart)
		}
	}
}
