package agent_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/objectstore"
)

// A request for two partitions whose second partition meets a full buffer
// is refused (ResourceExhausted, "retry later"), and its first partition,
// already appended, is taken back: a client that retries finds nothing of
// the refused request committed (before, partition 0 was committed and a
// retry wrote it twice).
func TestPartlyRefusedProduceCommitsNothing(t *testing.T) {
	h := start(t, func(a *agent.Config, b *batcher.Config) {
		a.MaxBackpressureWait = 100 * time.Millisecond
		a.MaxRecordBytes = 32 << 10
		a.MaxRequestBytes = 64 << 10
		b.MaxFileBytes = 40 << 10
		b.MaxBufferedBytes = 40 << 10
		b.Linger = 200 * time.Millisecond
	})
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	// Uploads are slow: the buffer stays full while the first batch's
	// file is stored, and that batch is not committing yet.
	h.store.Set(objectstore.FaultConfig{Latency: time.Second, Operations: []string{objectstore.OpPut}})
	batch := func() []byte {
		b, err := client.EncodeBatch([]*floev1.Record{client.Value(nil, make([]byte, 30<<10))}, floev1.Compression_COMPRESSION_NONE, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	_, err := h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{
		{Partition: 0, Batches: batch()}, {Partition: 1, Batches: batch()}}})
	if code(err) != codes.ResourceExhausted {
		t.Fatalf("request over the buffer: %v, want ResourceExhausted", err)
	}
	// The retry, once there is room, is the only copy in the log.
	var resp *floev1.ProduceBatchesResponse
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err = h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{
			{Partition: 0, Batches: batch()}}})
		if err == nil {
			break
		}
		if code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := resp.GetResults()[0].GetBaseOffset(); got != 0 {
		t.Fatalf("retry landed at offset %d: the refused request's partition 0 was committed", got)
	}
	for p := int32(0); p < 2; p++ {
		lo, err := h.c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: "t", Partitions: []int32{p}})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(1 - p); lo.GetOffsets()[0].GetOffset() != want {
			t.Errorf("partition %d high watermark %d, want %d", p, lo.GetOffsets()[0].GetOffset(), want)
		}
	}
}
