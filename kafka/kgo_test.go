package kafka_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newClient is a kgo client of b with quick retries.
func newClient(t testing.TB, b *broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic over Kafka's CreateTopics.
func createTopic(t testing.TB, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 3
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// sentRecords makes n records with keys, headers and timestamps.
func sentRecords(topic string, n int) []*kgo.Record {
	base := time.UnixMilli(1700000000000)
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{
			Topic: topic, Key: fmt.Appendf(nil, "key-%d", i%17), Value: fmt.Appendf(nil, "value %d of %s", i, topic),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	out[3].Key = nil     // a null key
	out[5].Value = nil   // a null value (tombstone)
	out[7].Headers = nil // no headers
	return out
}

// produceAll produces recs synchronously and fails on any error.
func produceAll(t testing.TB, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeN polls cl until it has n records (or fails after 30 s).
func consumeN(t testing.TB, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// sameRecords checks that got holds exactly the records of want (by
// value), each with its key, headers and timestamp, and offsets dense per
// partition.
func sameRecords(t testing.TB, want, got []*kgo.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	byValue := map[string]*kgo.Record{}
	for _, r := range got {
		k := string(r.Value) + "|" + string(r.Key) + "|" + fmt.Sprint(r.Headers)
		if _, dup := byValue[k]; dup {
			t.Fatalf("record %q twice", k)
		}
		byValue[k] = r
	}
	for _, w := range want {
		k := string(w.Value) + "|" + string(w.Key) + "|" + fmt.Sprint(w.Headers)
		g, ok := byValue[k]
		if !ok {
			t.Fatalf("record %q (key %q, headers %v) not consumed", w.Value, w.Key, w.Headers)
		}
		if !g.Timestamp.Equal(w.Timestamp) || (w.Key == nil) != (g.Key == nil) || (w.Value == nil) != (g.Value == nil) {
			t.Fatalf("record %q came back as key %q value %q at %v, sent key %q value %q at %v", w.Value, g.Key, g.Value, g.Timestamp, w.Key, w.Value, w.Timestamp)
		}
	}
	offs := map[int32][]int64{}
	for _, r := range got {
		offs[r.Partition] = append(offs[r.Partition], r.Offset)
	}
	for p, o := range offs {
		sort.Slice(o, func(i, j int) bool { return o[i] < o[j] })
		for i := range o {
			if o[i] != int64(i) {
				t.Fatalf("partition %d offsets %v: not dense from 0", p, o)
			}
		}
	}
}

// TestKgoProduceConsumeCodecs produces with every compression codec,
// idempotent and not, acks all, 1 and 0, and reads back exactly what was
// sent.
func TestKgoProduceConsumeCodecs(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	modes := map[string][]kgo.Opt{
		"idempotent": nil,
		"acks1":      {kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck())},
	}
	for cname, codec := range codecs {
		for mname, mopts := range modes {
			t.Run(cname+"/"+mname, func(t *testing.T) {
				topic := "t-" + cname + "-" + mname
				createTopic(t, admin, topic, 3)
				p := newClient(t, b, append([]kgo.Opt{kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(time.Millisecond)}, mopts...)...)
				want := sentRecords(topic, 200)
				produceAll(t, p, want)
				c := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				sameRecords(t, want, consumeN(t, c, len(want)))
			})
		}
	}
	t.Run("acks0", func(t *testing.T) {
		topic := "t-acks0"
		createTopic(t, admin, topic, 1)
		p := newClient(t, b, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.NoAck()))
		want := sentRecords(topic, 50)
		produceAll(t, p, want)
		c := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		sameRecords(t, want, consumeN(t, c, len(want)))
	})
}
