package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/iceberg/icetest"
)

// listEarliest is Kafka's ListOffsets earliest of topic's partitions 0
// and 1.
func listEarliest(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for p := range int32(2) {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -2 // earliest
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	lr, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, p := range lr.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("ListOffsets earliest of partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
		out[p.Partition] = p.Offset
	}
	return out
}

// fetchAt is one Kafka Fetch of topic's partition at offset.
func fetchAt(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, p int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestKafkaTableLogStart: Kafka's DeleteRecords on a topic served partly
// from its table moves the log start into the table (below the raw log
// start) or past it, as Kafka's: the low watermark answered,
// ListOffsets earliest, OFFSET_OUT_OF_RANGE below it with the log start,
// and a consumer from the start reads from it.
func TestKafkaTableLogStart(t *testing.T) {
	e := newKafkaTableEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, e.reader)
	const below, above = 60, 200 // the raw log start is 180
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = e.topic
	for p, off := range []int64{below, above} {
		dp := kmsg.NewDeleteRecordsRequestTopicPartition()
		dp.Partition, dp.Offset = int32(p), off
		dt.Partitions = append(dt.Partitions, dp)
	}
	dr.Topics = append(dr.Topics, dt)
	dresp, err := dr.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: below, 1: above}
	for _, p := range dresp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.LowWatermark != want[p.Partition] {
			t.Fatalf("DeleteRecords of partition %d: low watermark %d (%v), want %d", p.Partition, p.LowWatermark, kerr.ErrorForCode(p.ErrorCode), want[p.Partition])
		}
	}
	if got := listEarliest(ctx, t, cl, e.topic); got[0] != below || got[1] != above {
		t.Fatalf("ListOffsets earliest after DeleteRecords: %v, want %v", got, want)
	}
	for p, w := range want {
		fp := fetchAt(ctx, t, cl, e.topic, p, w-1)
		if fp.ErrorCode != kerr.OffsetOutOfRange.Code || len(fp.RecordBatches) != 0 { // Kafka answers no log start with an error (-1)
			t.Fatalf("fetch of partition %d at %d: %v, %d bytes; want OFFSET_OUT_OF_RANGE", p, w-1, kerr.ErrorForCode(fp.ErrorCode), len(fp.RecordBatches))
		}
		if fp = fetchAt(ctx, t, cl, e.topic, p, w); fp.ErrorCode != 0 || fp.LogStartOffset != w || len(fp.RecordBatches) == 0 {
			t.Fatalf("fetch of partition %d at %d: %v, log start %d, %d bytes; want records from log start %d", p, w, kerr.ErrorForCode(fp.ErrorCode), fp.LogStartOffset, len(fp.RecordBatches), w)
		}
	}
	n := (230 - below) + (230 - above)
	got := consumeN(t, newClient(t, e.reader, kgo.ConsumeTopics(e.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(4000)), n)
	next := map[int32]int64{0: below, 1: above}
	for _, r := range got {
		if r.Offset != next[r.Partition] || string(r.Value) != e.want[po{r.Partition, r.Offset}] {
			t.Fatalf("consumer: partition %d offset %d %q, want offset %d %q", r.Partition, r.Offset, r.Value, next[r.Partition], e.want[po{r.Partition, next[r.Partition]}])
		}
		next[r.Partition]++
	}
	if next[0] != 230 || next[1] != 230 {
		t.Fatalf("consumer ended at %v, want 230 each", next)
	}
}

// TestKafkaTableCorrupt: a table data file that does not decode fails
// the Kafka fetch of the offsets below the raw log start with an error
// (never a wrong record), and the raw offsets still read.
func TestKafkaTableCorrupt(t *testing.T) {
	e := newKafkaTableEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	icetest.CorruptDataFiles(ctx, t, e.w, e.topic)
	cl := newClient(t, e.reader)
	fp := fetchAt(ctx, t, cl, e.topic, 0, 0)
	if fp.ErrorCode != kerr.UnknownServerError.Code || len(fp.RecordBatches) != 0 {
		t.Fatalf("fetch of a corrupt table: %v, %d bytes; want UNKNOWN_SERVER_ERROR and no record", kerr.ErrorForCode(fp.ErrorCode), len(fp.RecordBatches))
	}
	if fp = fetchAt(ctx, t, cl, e.topic, 0, 180); fp.ErrorCode != 0 || len(fp.RecordBatches) == 0 {
		t.Fatalf("fetch of the raw part: %v, %d bytes", kerr.ErrorForCode(fp.ErrorCode), len(fp.RecordBatches))
	}
}
