package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/kbatch"
)

// encodeBatch is a Kafka v2 batch of n records as a producer sends it.
func encodeBatch(t *testing.T, n int, producerID int64, epoch int16, seq int32, ts int64) []byte {
	t.Helper()
	opts := kbatch.DefaultEncodeOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = producerID, epoch, seq
	recs := make([]kbatch.Record, n)
	for i := range recs {
		recs[i] = kbatch.Record{Timestamp: ts + int64(i), Value: []byte("v")}
	}
	b, err := kbatch.Encode(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceRaw sends one partition's batch and returns its answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, p int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestIdempotentSequences: Kafka's sequence rules over the wire: the next
// sequence is appended, a retry of a committed batch gets its original
// offset, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch is
// INVALID_PRODUCER_EPOCH, an id never issued UNKNOWN_PRODUCER_ID.
func TestIdempotentSequences(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "seq", 1)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(context.Background(), cl)
	if err != nil || ir.ErrorCode != 0 || ir.ProducerID <= 0 {
		t.Fatalf("InitProducerId: %v %+v", err, ir)
	}
	id, epoch := ir.ProducerID, ir.ProducerEpoch
	first := encodeBatch(t, 3, id, epoch, 0, 1700000000000)
	if r := produceRaw(t, cl, "seq", 0, first); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", r)
	}
	if r := produceRaw(t, cl, "seq", 0, encodeBatch(t, 2, id, epoch, 3, 1700000000010)); r.ErrorCode != 0 || r.BaseOffset != 3 {
		t.Fatalf("second batch: %+v", r)
	}
	if r := produceRaw(t, cl, "seq", 0, first); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("a retry of the first batch: %+v, want its original offset 0", r)
	}
	if r := produceRaw(t, cl, "seq", 0, encodeBatch(t, 1, id, epoch, 9, 1700000000020)); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("a gap: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", r.ErrorCode)
	}
	if r := produceRaw(t, cl, "seq", 0, encodeBatch(t, 1, 987654, 0, 0, 1700000000020)); r.ErrorCode != kerr.UnknownProducerID.Code {
		t.Fatalf("an id never issued: error %d, want UNKNOWN_PRODUCER_ID", r.ErrorCode)
	}
	hw := listOffset(t, cl, "seq", 0, -1)
	if hw != 5 {
		t.Fatalf("high watermark %d, want 5: a retry or refusal was appended", hw)
	}
}

// TestIdempotentPipelined: a kgo idempotent producer (5 requests in
// flight against a broker of Kafka v1 or later) with tiny batches keeps every partition's records in order, without a copy.
func TestIdempotentPipelined(t *testing.T) {
	b := startBroker(t, nil)
	p := newClient(t, b, kgo.ProducerBatchMaxBytes(512), kgo.ProducerLinger(0))
	createTopic(t, p, "pipe", 2)
	var recs []*kgo.Record
	for i := range 400 {
		recs = append(recs, &kgo.Record{Topic: "pipe", Key: []byte{byte(i % 2)}, Value: []byte{byte(i >> 8), byte(i)}})
	}
	ctx := context.Background()
	done := make(chan error, len(recs))
	for _, r := range recs {
		p.Produce(ctx, r, func(_ *kgo.Record, err error) { done <- err })
	}
	for range recs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, b, kgo.ConsumeTopics("pipe"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeN(t, c, len(recs))
	last := map[int32]int{0: -1, 1: -1}
	for _, r := range got {
		i := int(r.Value[0])<<8 | int(r.Value[1])
		if i <= last[r.Partition] {
			t.Fatalf("partition %d: record %d after %d", r.Partition, i, last[r.Partition])
		}
		last[r.Partition] = i
	}
	if len(got) != 400 {
		t.Fatalf("%d records", len(got))
	}
}

// TestTransactionsRefused: a transactional producer is told clearly.
func TestTransactionsRefused(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	init := kmsg.NewPtrInitProducerIDRequest()
	txn := "tx-1"
	init.TransactionalID, init.TransactionTimeoutMillis = &txn, 60000
	// Sent to the broker itself: kgo would first look for the transaction
	// coordinator, refused below.
	raw, err := cl.SeedBrokers()[0].Request(context.Background(), init)
	if err != nil {
		t.Fatal(err)
	}
	if ir := raw.(*kmsg.InitProducerIDResponse); ir.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("transactional InitProducerId: code %d", ir.ErrorCode)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey, fc.CoordinatorKeys = 1, txn, []string{txn}
	fr, err := fc.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.Coordinators) == 0 || fr.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code || fr.Coordinators[0].ErrorMessage == nil {
		t.Fatalf("transaction coordinator: %+v", fr)
	}
}

func listOffset(t *testing.T, cl *kgo.Client, topic string, p int32, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("list offsets %s/%d at %d: error %d", topic, p, ts, sp.ErrorCode)
	}
	return sp.Offset
}

// TestListOffsets: earliest, latest and by timestamp (-1 past the end).
func TestListOffsets(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "lo", 1)
	for i := range 3 {
		produceRaw(t, cl, "lo", 0, encodeBatch(t, 2, -1, -1, -1, 1700000000000+int64(i)*1000))
	}
	for _, c := range []struct{ ts, want int64 }{{-2, 0}, {-1, 6}, {1700000000000, 0}, {1700000001000, 2}, {1700000001500, 4}, {1700000009000, -1}} {
		if got := listOffset(t, cl, "lo", 0, c.ts); got != c.want {
			t.Errorf("timestamp %d: offset %d, want %d", c.ts, got, c.want)
		}
	}
}

// fetchReq is a fetch of partitions 0..n-1 of topic from offset 0.
func fetchReq(topic string, n int32, maxBytes, partMax, minBytes, waitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis, req.SessionEpoch = maxBytes, minBytes, waitMs, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := range n {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, partMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFetchLimits: the total and per-partition byte bounds (at least one
// batch for the first partition with data), a long poll that an append
// wakes, a fetch without a session (epoch -1) answered with session id
// 0, and an incremental fetch of an unknown session refused.
func TestFetchLimits(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "fl", 3)
	for p := range int32(3) {
		for i := range 3 {
			produceRaw(t, cl, "fl", p, encodeBatch(t, 10, -1, -1, -1, 1700000000000+int64(i)))
		}
	}
	batch := len(encodeBatch(t, 10, -1, -1, -1, 1700000000000))
	ctx := context.Background()
	// A total of one byte: only the first partition answers, with one batch.
	resp, err := fetchReq("fl", 3, 1, 1<<20, 1, 0).RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Topics[0].Partitions
	if len(ps[0].RecordBatches) != batch || len(ps[1].RecordBatches) != 0 || len(ps[2].RecordBatches) != 0 || resp.SessionID != 0 {
		t.Fatalf("total 1 byte: %d, %d, %d bytes (batch %d), session %d", len(ps[0].RecordBatches), len(ps[1].RecordBatches), len(ps[2].RecordBatches), batch, resp.SessionID)
	}
	// Per partition: within its bound, and at least one batch. (A read may
	// end at a file's end, well within the bound: the agent's read path.)
	for _, c := range []struct{ partMax, least, most int }{{batch + batch/2, batch, batch + batch/2}, {1 << 20, batch, 3 * batch}} {
		resp, err = fetchReq("fl", 3, 1<<20, int32(c.partMax), 1, 0).RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for p, sp := range resp.Topics[0].Partitions {
			if n := len(sp.RecordBatches); n < c.least || n > c.most || sp.HighWatermark != 30 || sp.LastStableOffset != 30 {
				t.Fatalf("partition max %d: partition %d: %d bytes (want %d to %d), hw %d, lso %d", c.partMax, p, n, c.least, c.most, sp.HighWatermark, sp.LastStableOffset)
			}
		}
	}
	// An incremental fetch of a session never created.
	inc := fetchReq("fl", 1, 1<<20, 1<<20, 1, 0)
	inc.SessionID, inc.SessionEpoch = 42, 1
	resp, err = inc.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("incremental fetch: %v, code %d", err, resp.ErrorCode)
	}
	// A long poll at the end is answered by the next append.
	createTopic(t, cl, "fl-empty", 1)
	got := make(chan *kmsg.FetchResponse, 1)
	go func() {
		r, err := fetchReq("fl-empty", 1, 1<<20, 1<<20, 1, 20000).RequestWith(ctx, cl)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	time.Sleep(50 * time.Millisecond) // let the fetch start waiting (not required for correctness)
	produceRaw(t, cl, "fl-empty", 0, encodeBatch(t, 1, -1, -1, -1, 1700000000000))
	r := <-got
	if r == nil || len(r.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("the long poll answered without the appended batch: %+v", r)
	}
	// A fetch past the end is OFFSET_OUT_OF_RANGE.
	oor := fetchReq("fl", 1, 1<<20, 1<<20, 1, 0)
	oor.Topics[0].Partitions[0].FetchOffset = 99
	resp, err = oor.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("past the end: %v, code %d", err, resp.Topics[0].Partitions[0].ErrorCode)
	}
}

// TestGroupAdmin: ListGroups, DescribeGroups and DeleteGroups over a
// group that only has positions.
func TestGroupAdmin(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	ctx := context.Background()
	createTopic(t, cl, "ga", 1)
	produceRaw(t, cl, "ga", 0, encodeBatch(t, 1, -1, -1, -1, 1700000000000))
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "admin-g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "ga"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if r, err := commit.RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v %+v", err, r)
	}
	lr, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil || len(lr.Groups) != 1 || lr.Groups[0].Group != "admin-g" {
		t.Fatalf("list groups: %v %+v", err, lr)
	}
	if d := describeGroup(t, cl, "admin-g"); d.State != "Empty" || d.ErrorCode != 0 {
		t.Fatalf("describe: %+v", d)
	}
	if d := describeGroup(t, cl, "nobody"); d.State != "Dead" {
		t.Fatalf("describe an unknown group: %+v", d)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"admin-g", "nobody"}
	dr, err := del.RequestWith(ctx, cl)
	if err != nil || dr.Groups[0].ErrorCode != 0 || dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %v %+v", err, dr)
	}
	if lr, _ := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl); len(lr.Groups) != 0 {
		t.Fatalf("groups after delete: %+v", lr.Groups)
	}
}

// TestFetchEmptyRecordsNotNull: a partition answered without data carries
// empty records (size 0), never null (size -1), at every version Fetch
// serves: librdkafka (kcat -e, confluent-kafka) fails such a partition as
// "invalid MessageSetSize -1" and never reports reaching its end.
func TestFetchEmptyRecordsNotNull(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "empty-fetch", 1)
	for v := int16(4); v <= 12; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "empty-fetch"
		for _, p := range []int32{0, 7} { // at the end, and an unknown partition
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		c := dialRaw(t, b.addr)
		c.send(req, 1)
		_, body, err := c.recv()
		if err != nil {
			t.Fatal(err)
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(v)
		if resp.IsFlexible() {
			body = body[1:]
		}
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.RecordBatches == nil {
				t.Fatalf("Fetch v%d partition %d (error %d): null records", v, p.Partition, p.ErrorCode)
			}
		}
	}
}

// TestListOffsetsMaxTimestamp: v7's -3 answers the first record carrying
// the log's largest timestamp, inside its batch, with that timestamp; an
// empty partition answers -1.
func TestListOffsetsMaxTimestamp(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "lomax", 2)
	base := time.UnixMilli(1700000000000)
	for _, batch := range [][]int64{{1000, 5000, 3000}, {5000, 2000}} {
		var recs []*kgo.Record
		for _, d := range batch {
			recs = append(recs, &kgo.Record{Topic: "lomax", Partition: 0, Value: []byte("v"), Timestamp: base.Add(time.Duration(d) * time.Millisecond)})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "lomax"
	for p := range int32(2) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -3
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 7 {
		t.Fatalf("answered at v%d, want 7", resp.Version)
	}
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if p0.ErrorCode != 0 || p0.Offset != 1 || p0.Timestamp != base.UnixMilli()+5000 {
		t.Errorf("partition 0: offset %d timestamp %d code %d; want offset 1 timestamp %d", p0.Offset, p0.Timestamp, p0.ErrorCode, base.UnixMilli()+5000)
	}
	if p1.ErrorCode != 0 || p1.Offset != -1 || p1.Timestamp != -1 {
		t.Errorf("empty partition 1: %+v", p1)
	}
}

// TestDescribeProducers: an idempotent franz-go producer is listed on the
// partitions it wrote with its id, epoch and last sequence; an unknown
// partition is UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeProducers(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "dp", 2)
	for i := range 3 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "dp", Partition: 0, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	id, epoch, err := cl.ProducerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "dp", Partitions: []int32{0, 1, 7}}}
	raw, err := cl.SeedBrokers()[0].Request(context.Background(), req) // kgo would shard it by leader
	if err != nil {
		t.Fatal(err)
	}
	ps := raw.(*kmsg.DescribeProducersResponse).Topics[0].Partitions
	if len(ps) != 3 || ps[0].ErrorCode != 0 || len(ps[0].ActiveProducers) != 1 {
		t.Fatalf("partitions: %+v", ps)
	}
	if ap := ps[0].ActiveProducers[0]; ap.ProducerID != id || ap.ProducerEpoch != int32(epoch) || ap.LastSequence != 2 {
		t.Errorf("producer %+v, want id %d epoch %d last sequence 2", ap, id, epoch)
	}
	if ps[1].ErrorCode != 0 || len(ps[1].ActiveProducers) != 0 {
		t.Errorf("partition 1: %+v", ps[1])
	}
	if ps[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 7: code %d", ps[2].ErrorCode)
	}
}
