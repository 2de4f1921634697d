package agent_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// headerRecord is a record of n empty headers and nothing else.
func headerRecord(n int) *floev1.Record {
	r := &floev1.Record{Headers: make([]*floev1.Header, n)}
	for i := range r.Headers {
		r.Headers[i] = &floev1.Header{}
	}
	return r
}

// A record's headers count HeaderOverhead each against the record limit,
// on both produce paths, also for the first record of a request. Before,
// one record of a million empty headers (a few hundred bytes once zstd
// compressed, hundreds of MB once decoded by a Fetch) counted as zero
// bytes and was accepted by both.
func TestEmptyHeadersCountAgainstRecordLimit(t *testing.T) {
	const limit = 64 << 10
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes = limit
		a.MaxRequestBytes = 4 * limit
	}})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	p := int32(0)
	fits := limit / agent.HeaderOverhead
	if _, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{headerRecord(fits)}}); err != nil {
		t.Fatalf("record of %d empty headers (%d bytes counted): %v", fits, fits*agent.HeaderOverhead, err)
	}
	_, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{headerRecord(fits + 1)}})
	wantStatus(t, "first record, one empty header over", err, codes.InvalidArgument, agent.ReasonRecordTooLarge, fmt.Sprint(limit), "per header")

	// The batch data plane: one zstd batch of one record of 100,000 empty
	// headers, a few hundred bytes sent.
	id, err := s.log.InitProducer(ctx, &floev1.InitProducerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	kr := kbatch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte{}, Headers: make([]kbatch.Header, 100_000)}
	opts := kbatch.EncodeOptions{Compression: kbatch.Zstd, ProducerID: id.GetProducerId(), ProducerEpoch: 0, BaseSequence: 0}
	b, err := kbatch.Encode([]kbatch.Record{kr}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4<<10 {
		t.Fatalf("test premise: the batch is %d bytes", len(b))
	}
	_, err = s.log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}})
	wantStatus(t, "batch of one record of 100000 empty headers", err, codes.InvalidArgument, agent.ReasonRecordTooLarge, fmt.Sprint(limit))
}

// A Fetch bounds what one stored record makes it decode: a record over
// MaxReadRecordBytes (0: MaxRecordBytes), headers counted, is refused with
// InvalidArgument naming the limit before its headers are built. Here an
// agent with a 1 MiB record limit stores a record of 100,000 empty headers
// (1,000,000 bytes counted) and an agent with a 64 KiB limit reads it.
// Before, the reader decoded every header whatever its limits.
func TestFetchBoundsDecodedRecord(t *testing.T) {
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	acfg.PollInterval = 200 * time.Millisecond
	writer := startNode(t, meta, store, acfg, bcfg)
	if _, err := writer.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.c.Produce(ctx, "t", 0, headerRecord(100_000)); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.c.Produce(ctx, "t", 0, &floev1.Record{Value: []byte("small")}); err != nil {
		t.Fatal(err)
	}
	small := acfg
	small.MaxRecordBytes, small.MaxRequestBytes = 64<<10, 64<<10
	reader := startNode(t, meta, store, small, bcfg)
	_, err = reader.c.Fetch(ctx, "t", 0, 0, 1024, 0)
	if code(err) != codes.InvalidArgument || errorInfo(err).GetReason() != agent.ReasonBatchTooLarge {
		t.Fatalf("fetch of a record of 100000 headers under a 64 KiB read bound: %v", err)
	}
	resp, err := reader.c.Fetch(ctx, "t", 0, 1, 1024, 0)
	if err != nil || len(resp.GetRecords()) != 1 || string(resp.GetRecords()[0].GetValue()) != "small" {
		t.Fatalf("fetch past it: %v %v", resp, err)
	}
	// The writer's own bound (1 MiB) serves it.
	resp, err = writer.c.Fetch(ctx, "t", 0, 0, 1024, 0)
	if err != nil || len(resp.GetRecords()) != 1 || len(resp.GetRecords()[0].GetHeaders()) != 100_000 {
		t.Fatalf("fetch under the writer's bound: %v", err)
	}
}

// Timestamps are bounded at produce on both paths: MaxInt64 (and anything
// past MaxTimestampMs) always, and more than TimestampAfterMax (1 h by
// default) after the agent's clock. Before, only negatives were refused
// and MaxInt64 reached the table as 1969.
func TestProduceBoundsTimestamps(t *testing.T) {
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) { a.TimestampBeforeMax = 24 * time.Hour }})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	p := int32(0)
	now := time.Now().UnixMilli()
	for _, c := range []struct {
		ts    int64
		limit string
	}{
		{math.MaxInt64, "max_timestamp_ms"},
		{now + 2*time.Hour.Milliseconds(), "timestamp_after_max"},
		{now - 48*time.Hour.Milliseconds(), "timestamp_before_max"},
		{-1, "timestamp"},
	} {
		_, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: []byte("v"), TimestampMs: c.ts}}})
		wantStatus(t, fmt.Sprintf("record at %d", c.ts), err, codes.InvalidArgument, agent.ReasonInvalidTimestamp, c.limit)
		if c.ts < 0 {
			continue // a batch with a negative timestamp is refused as malformed
		}
		id, err := s.log.InitProducer(ctx, &floev1.InitProducerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := kbatch.Encode([]kbatch.Record{{Timestamp: now, Value: []byte("a")}, {Timestamp: c.ts, Value: []byte("b")}},
			kbatch.EncodeOptions{ProducerID: id.GetProducerId(), BaseSequence: 0})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}})
		wantStatus(t, fmt.Sprintf("batch with a record at %d", c.ts), err, codes.InvalidArgument, agent.ReasonInvalidTimestamp, c.limit)
	}
	if _, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: []byte("v"), TimestampMs: now - time.Hour.Milliseconds()}}}); err != nil {
		t.Fatalf("a timestamp an hour old: %v", err)
	}
}
