package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// TestKafkaToGRPC: records produced over Kafka are fetched over gRPC with
// the same keys, values, headers and timestamps, and gRPC's batch fetch
// serves the very bytes a Kafka Fetch serves.
func TestKafkaToGRPC(t *testing.T) {
	b := startBroker(t, nil)
	p := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	createTopic(t, p, "k2g", 2)
	want := sentRecords("k2g", 40)
	for _, r := range want {
		r.Partition = 1
	}
	produceAll(t, p, want)
	ctx := context.Background()
	resp, err := b.c.Fetch(ctx, "k2g", 1, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetRecords()
	if len(got) != len(want) {
		t.Fatalf("gRPC fetched %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.GetOffset() != int64(i) || !bytes.Equal(g.GetKey(), w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.GetValue(), w.Value) || g.GetNullValue() != (w.Value == nil) || g.GetTimestampMs() != w.Timestamp.UnixMilli() {
			t.Fatalf("record %d: gRPC %v, Kafka sent key %q value %q ts %d", i, g, w.Key, w.Value, w.Timestamp.UnixMilli())
		}
		if len(g.GetHeaders()) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, sent %d", i, len(g.GetHeaders()), len(w.Headers))
		}
		for j, h := range w.Headers {
			if g.GetHeaders()[j].GetKey() != h.Key || !bytes.Equal(g.GetHeaders()[j].GetValue(), h.Value) {
				t.Fatalf("record %d header %d: %v, sent %v", i, j, g.GetHeaders()[j], h)
			}
		}
	}
	// The stored batches, as both front ends serve them.
	gb, err := b.c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: "k2g", Partition: 1, Batches: true})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "k2g"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = 1, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := req.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	kp := kresp.Topics[0].Partitions[0]
	if kp.ErrorCode != 0 || kp.HighWatermark != int64(len(want)) || !bytes.Equal(kp.RecordBatches, gb.GetBatches()) || len(kp.RecordBatches) == 0 {
		t.Fatalf("Kafka fetch: error %d, hw %d, %d bytes; gRPC batch fetch %d bytes (equal %v)",
			kp.ErrorCode, kp.HighWatermark, len(kp.RecordBatches), len(gb.GetBatches()), bytes.Equal(kp.RecordBatches, gb.GetBatches()))
	}
}

// TestGRPCToKafka: records produced over gRPC are consumed by a Kafka
// client with the same keys, values, headers and timestamps.
func TestGRPCToKafka(t *testing.T) {
	b := startBroker(t, nil)
	ctx := context.Background()
	if _, err := b.c.CreateTopic(ctx, "g2k", 3, nil); err != nil {
		t.Fatal(err)
	}
	var sent []*floev1.Record
	for i := range 30 {
		r := &floev1.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i), TimestampMs: 1700000000000 + int64(i),
			Headers: []*floev1.Header{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}}}
		if i == 4 {
			r.Value, r.NullValue = nil, true
		}
		sent = append(sent, r)
	}
	if _, err := b.c.Produce(ctx, "g2k", 2, sent...); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"g2k": {2: kgo.NewOffset().AtStart()}}))
	got := consumeN(t, c, len(sent))
	for i, s := range sent {
		g := got[i]
		if g.Partition != 2 || g.Offset != int64(i) || !bytes.Equal(g.Key, s.GetKey()) || !bytes.Equal(g.Value, s.GetValue()) ||
			(g.Value == nil) != s.GetNullValue() || g.Timestamp.UnixMilli() != s.GetTimestampMs() ||
			len(g.Headers) != 1 || g.Headers[0].Key != "h" || !bytes.Equal(g.Headers[0].Value, s.GetHeaders()[0].GetValue()) {
			t.Fatalf("record %d: Kafka got %+v, gRPC sent %v", i, g, s)
		}
	}
}

// TestGroupOffsetsShared: offsets committed over gRPC are what a Kafka
// OffsetFetch answers, and a Kafka commit is what gRPC reads.
func TestGroupOffsetsShared(t *testing.T) {
	b := startBroker(t, nil)
	ctx := context.Background()
	cl := newClient(t, b)
	createTopic(t, cl, "pos", 2)
	produceAll(t, cl, []*kgo.Record{{Topic: "pos", Partition: 0, Value: []byte("a")}, {Topic: "pos", Value: []byte("b")}})
	if _, err := b.c.Groups().CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "shared",
		Offsets: []*floev1.OffsetCommit{{Topic: "pos", Partition: 0, Offset: 1, Metadata: "grpc"}}}); err != nil {
		t.Fatal(err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "shared"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "pos", []int32{0, 1}
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	ps := fresp.Groups[0].Topics[0].Partitions
	if len(ps) != 2 || ps[0].Offset != 1 || *ps[0].Metadata != "grpc" || ps[1].Offset != -1 {
		t.Fatalf("Kafka OffsetFetch after a gRPC commit: %+v", ps)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "shared", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "pos"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 1, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cresp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(cresp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	gresp, err := b.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if len(gresp.GetOffsets()) != 2 || gresp.GetOffsets()[1].GetOffset() != 1 {
		t.Fatalf("gRPC FetchOffsets after a Kafka commit: %v", gresp.GetOffsets())
	}
}
