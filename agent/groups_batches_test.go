package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// A group member in batches mode gets every record once, in order: a
// member that stops in the middle of a batch commits there, and the next
// member, whose first batch starts below the committed position, skips
// the records already handed over.
func TestGroupConsumerBatches(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	const batches, per = 3, 10
	for b := range batches {
		var recs []*floev1.Record
		for i := range per {
			recs = append(recs, client.Value([]byte(fmt.Sprintf("k%d", b*per+i)), []byte(fmt.Sprintf("v%d", b*per+i))))
		}
		b, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_ZSTD, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t",
			Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}}); err != nil {
			t.Fatal(err)
		}
	}
	next := int64(0)
	consume := func(until int64) {
		t.Helper()
		gc, err := client.NewGroupConsumer([]*client.Client{h.c}, client.GroupOptions{Group: "g", Topic: "t", Earliest: true, Batches: true})
		if err != nil {
			t.Fatal(err)
		}
		for next < until {
			rec, err := gc.Poll(ctx)
			if err != nil {
				t.Fatalf("poll at %d: %v", next, err)
			}
			if rec == nil {
				continue
			}
			if rec.GetOffset() != next || string(rec.GetValue()) != fmt.Sprintf("v%d", next) {
				t.Fatalf("record at %d (%q), want %d", rec.GetOffset(), rec.GetValue(), next)
			}
			next++
		}
		if err := gc.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	consume(15) // stops in the middle of the second batch
	consume(batches * per)
}
