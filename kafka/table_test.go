package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore/s3store"
	"github.com/floe-broker/floe/tableread"
)

// po is a partition and offset.
type po struct {
	p   int32
	off int64
}

// kafkaTableEnv is a topic "aged" of 2 partitions whose offsets [0, 180)
// of each are in its Iceberg table only (their raw files aged out) and
// [180, 230) in raw files, and a broker whose agent reads the table.
type kafkaTableEnv struct {
	reader *broker
	w      *iceberg.Writer
	topic  string
	want   map[po]string // the values produced
}

// newKafkaTableEnv produces through Kafka (lz4 batches), runs the
// compactor in process (PostgreSQL + S3) until the table holds the
// first 180 offsets of each partition and their raw files are gone, and
// produces 50 more of each that stay raw.
func newKafkaTableEnv(t *testing.T) *kafkaTableEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.S3(t)
	cfg := s3store.DefaultConfig()
	cfg.Endpoint, cfg.Region, cfg.AccessKey, cfg.SecretKey, cfg.Bucket, cfg.PathStyle = env.Endpoint, env.Region, env.AccessKey, env.SecretKey, env.Bucket, true
	store, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	meta, err := postgres.Open(ctx, testenv.Postgres(t), postgres.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	w, _ := icetest.Open(t, icetest.PostgresConfig(t), iceberg.Options{})
	ccfg := compactor.DefaultConfig()
	ccfg.Owner, ccfg.Grace, ccfg.MergeSmallBytes, ccfg.Iceberg = "test", 0, 0, w
	comp, err := compactor.New(meta, store, ccfg)
	if err != nil {
		t.Fatal(err)
	}

	const topic = "aged"
	// Every agent reads the table, as in a deployment: kgo sends each
	// partition's requests to its leader, which may be either agent.
	tr, err := tableread.New(w, tableread.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	writer := startBrokerWith(t, meta, store, nil, agent.Options{Tables: tr}, kafka.Options{}, nil)
	if _, err := writer.c.CreateTopic(ctx, topic, 2, map[string]string{"retention.raw.ms": "0", "iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	pc := newClient(t, writer, kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := map[po]string{}
	total := 0
	produce := func(n int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: fmt.Appendf(nil, "k%d", i%5),
				Value: fmt.Appendf(nil, `{"n":%d,"pad":"%0150d"}`, total+i, i), Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}}
		}
		res := pc.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			want[po{r.Record.Partition, r.Record.Offset}] = string(r.Record.Value)
		}
		total += n
	}
	for range 3 {
		produce(120)
		if _, err := comp.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := comp.RunOnce(ctx); err != nil { // the dead files go
		t.Fatal(err)
	}
	tp, err := meta.DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range tp.PartitionStates {
		if st.LogStartOffset != 180 {
			t.Fatalf("partition %d: raw log start %d, want 180", st.Partition, st.LogStartOffset)
		}
	}
	produce(100) // raw

	reader := startBrokerWith(t, meta, store, nil, agent.Options{Tables: tr}, kafka.Options{}, nil)
	return &kafkaTableEnv{reader: reader, w: w, topic: topic, want: want}
}

// TestKafkaReadsBelowRawLogStart: a Kafka consumer (franz-go) reading
// from the start of a topic whose early raw files aged out into its
// Iceberg table gets every record once and in order across the table and
// the raw files, alone and in a group; ListOffsets earliest is the
// table's first offset. PostgreSQL + S3, the compactor in process.
func TestKafkaReadsBelowRawLogStart(t *testing.T) {
	e := newKafkaTableEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reader, topic, want := e.reader, e.topic, e.want
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for p := range int32(2) {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -2 // earliest
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	lr, err := lo.RequestWith(ctx, newClient(t, reader))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lr.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Offset != 0 {
			t.Errorf("ListOffsets earliest of partition %d: %d (error %d), want 0", p.Partition, p.Offset, p.ErrorCode)
		}
	}

	check := func(how string, got []*kgo.Record) {
		t.Helper()
		next := map[int32]int64{}
		for _, r := range got {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s: partition %d: offset %d, want %d", how, r.Partition, r.Offset, next[r.Partition])
			}
			if string(r.Value) != want[po{r.Partition, r.Offset}] || len(r.Headers) != 1 {
				t.Fatalf("%s: partition %d offset %d: %q %v, want %q", how, r.Partition, r.Offset, r.Value, r.Headers, want[po{r.Partition, r.Offset}])
			}
			next[r.Partition]++
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d", how, len(got), len(want))
		}
	}
	small := kgo.FetchMaxPartitionBytes(4000)
	check("consumer", consumeN(t, newClient(t, reader, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), small), len(want)))
	check("group", consumeN(t, newClient(t, reader, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("from-the-table"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), small), len(want)))
}
