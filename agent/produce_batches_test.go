package agent_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/kpartition"
)

// batchTestRecords covers keys, null keys, empty and null values, headers
// (with a null header value) and timestamps out of order.
func batchTestRecords() []*floev1.Record {
	return []*floev1.Record{
		{Key: []byte("k0"), Value: []byte("v0"), TimestampMs: 1700000000000,
			Headers: []*floev1.Header{{Key: "h", Value: []byte("x")}, {Key: "null", Value: nil}}},
		{Key: nil, Value: []byte("no key"), TimestampMs: 1700000000005},
		{Key: []byte("k2"), Value: nil, NullValue: true, TimestampMs: 1700000000001},
		{Key: []byte("k3"), Value: []byte{}, TimestampMs: 1700000000003},
		{Key: []byte{}, Value: bytes.Repeat([]byte("compressible "), 100), TimestampMs: 1700000000002},
	}
}

// sameRecord compares what a reader sees of two records.
func sameRecord(a, b *floev1.Record) bool {
	if !bytes.Equal(a.GetKey(), b.GetKey()) || (a.Key == nil) != (b.Key == nil) || !bytes.Equal(a.GetValue(), b.GetValue()) ||
		a.GetNullValue() != b.GetNullValue() || a.GetTimestampMs() != b.GetTimestampMs() || a.GetOffset() != b.GetOffset() ||
		a.GetPartition() != b.GetPartition() || len(a.GetHeaders()) != len(b.GetHeaders()) {
		return false
	}
	for i, h := range a.GetHeaders() {
		g := b.GetHeaders()[i]
		if h.GetKey() != g.GetKey() || !bytes.Equal(h.GetValue(), g.GetValue()) {
			return false
		}
	}
	return true
}

func sameRecords(t *testing.T, what string, got, want []*floev1.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !sameRecord(got[i], want[i]) {
			t.Fatalf("%s: record %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// fetchAll reads partition 0 of topic from 0 to hw, per record or in
// batches mode, with a small budget so that reads start inside batches.
func fetchAll(t *testing.T, c *client.Client, topic string, hw int64, batches bool) []*floev1.Record {
	t.Helper()
	ctx := context.Background()
	var out []*floev1.Record
	for off := int64(0); off < hw; {
		var recs []*floev1.Record
		var next int64
		if batches {
			resp, r, err := c.FetchBatches(ctx, topic, 0, off, 1, 1000)
			if err != nil {
				t.Fatalf("fetch batches at %d: %v", off, err)
			}
			if len(resp.GetRecords()) != 0 {
				t.Fatalf("batches mode answered %d records", len(resp.GetRecords()))
			}
			recs, next = r, resp.GetNextOffset()
		} else {
			resp, err := c.Fetch(ctx, topic, 0, off, 1, 1000)
			if err != nil {
				t.Fatalf("fetch at %d: %v", off, err)
			}
			recs, next = resp.GetRecords(), resp.GetNextOffset()
		}
		if next <= off {
			t.Fatalf("fetch at %d: next offset %d", off, next)
		}
		out = append(out, recs...)
		off = next
	}
	return out
}

// The batch API and the per-record API store the same thing: same
// offsets, and every reader (records, batches) sees the same records.
func TestBatchRoundTripMatchesRecords(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	for _, name := range []string{"records", "batches"} {
		if _, err := h.c.CreateTopic(ctx, name, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	recs := batchTestRecords()
	var want []*floev1.Record
	for round, comp := range []floev1.Compression{floev1.Compression_COMPRESSION_NONE, floev1.Compression_COMPRESSION_GZIP,
		floev1.Compression_COMPRESSION_SNAPPY, floev1.Compression_COMPRESSION_LZ4, floev1.Compression_COMPRESSION_ZSTD} {
		p := int32(0)
		presp, err := h.c.Log.Produce(ctx, &floev1.ProduceRequest{Topic: "records", Partition: &p, Records: recs, Compression: comp})
		if err != nil {
			t.Fatal(err)
		}
		b, err := client.EncodeBatch(recs, comp, nil)
		if err != nil {
			t.Fatal(err)
		}
		bresp, err := h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "batches",
			Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}})
		if err != nil {
			t.Fatalf("%v: %v", comp, err)
		}
		if res := bresp.GetResults(); len(res) != 1 || res[0].GetBaseOffset() != presp.GetOffsets()[0] || res[0].GetPartition() != 0 ||
			res[0].GetBaseOffset() != int64(round*len(recs)) {
			t.Fatalf("%v: batch landed at %v, records at %v", comp, res, presp.GetOffsets())
		}
		for i, r := range recs {
			w := proto.Clone(r).(*floev1.Record)
			w.Offset = int64(round*len(recs) + i)
			want = append(want, w)
		}
	}
	hw := int64(len(want))
	for _, topic := range []string{"records", "batches"} {
		sameRecords(t, topic+" fetched per record", fetchAll(t, h.c, topic, hw, false), want)
		sameRecords(t, topic+" fetched in batches", fetchAll(t, h.c, topic, hw, true), want)
	}
}

// franzBatch builds a batch of recs with franz-go's kmsg types, compressed
// with kgo's compressor, as a Kafka producer sends it.
func franzBatch(t *testing.T, recs []*floev1.Record, codec kgo.CompressionCodec, ctype int16) []byte {
	t.Helper()
	first := recs[0].GetTimestampMs()
	maxTS := first
	var raw []byte
	for i, r := range recs {
		maxTS = max(maxTS, r.GetTimestampMs())
		kr := kmsg.Record{TimestampDelta64: r.GetTimestampMs() - first, OffsetDelta: int32(i), Key: r.Key, Value: r.GetValue()}
		if !r.GetNullValue() && kr.Value == nil {
			kr.Value = []byte{}
		}
		for _, h := range r.GetHeaders() {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.GetKey(), Value: h.GetValue()})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		raw = kr.AppendTo(raw)
	}
	payload := raw
	if ctype != 0 {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), raw)
		if int16(used) != ctype {
			t.Fatalf("kgo used codec %d", used)
		}
		payload = bytes.Clone(out)
	}
	rb := kmsg.RecordBatch{Length: int32(49 + len(payload)), PartitionLeaderEpoch: -1, Magic: 2, Attributes: ctype,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: first, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: 0, NumRecords: int32(len(recs)), Records: payload}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// Batches from franz-go's encoder, in every codec, are taken as they are
// and read back the same by both read paths.
func TestFranzGoBatchesRoundTrip(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "franz", 1, nil); err != nil {
		t.Fatal(err)
	}
	recs := batchTestRecords()
	codecs := []struct {
		c     kgo.CompressionCodec
		ctype int16
	}{{kgo.NoCompression(), 0}, {kgo.GzipCompression(), 1}, {kgo.SnappyCompression(), 2}, {kgo.Lz4Compression(), 3}, {kgo.ZstdCompression(), 4}}
	var want []*floev1.Record
	for round, c := range codecs {
		b := franzBatch(t, recs, c.c, c.ctype)
		resp, err := h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "franz",
			Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}})
		if err != nil {
			t.Fatalf("codec %d: %v", c.ctype, err)
		}
		if got := resp.GetResults()[0].GetBaseOffset(); got != int64(round*len(recs)) {
			t.Fatalf("codec %d: base offset %d", c.ctype, got)
		}
		for i, r := range recs {
			w := proto.Clone(r).(*floev1.Record)
			w.Offset = int64(round*len(recs) + i)
			want = append(want, w)
		}
	}
	sameRecords(t, "franz-go batches per record", fetchAll(t, h.c, "franz", int64(len(want)), false), want)
	sameRecords(t, "franz-go batches in batches", fetchAll(t, h.c, "franz", int64(len(want)), true), want)
}

// A malformed or refused batch gets InvalidArgument naming the partition
// and the batch, and nothing reaches a file: the object store holds no
// file and the high watermark stays at 0.
func TestMalformedBatchNeverReachesAFile(t *testing.T) {
	const maxRequest = 64 << 10
	h := start(t, func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes = 16 << 10
		a.MaxRequestBytes = maxRequest
	})
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	recs := batchTestRecords()
	good, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_NONE, nil)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	reseal := func(b []byte) []byte {
		be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	edit := func(fn func(b []byte)) []byte { b := bytes.Clone(good); fn(b); return reseal(b) }
	big := bytes.Repeat([]byte("z"), 60<<10)
	var many []*floev1.Record
	for range 12 { // 180 KiB: past the request limit and its 64 KiB margin
		many = append(many, &floev1.Record{Value: big[:15<<10]})
	}
	bomb, err := client.EncodeBatch(many, floev1.Compression_COMPRESSION_ZSTD, nil) // compresses to little, expands past the limit
	if err != nil {
		t.Fatal(err)
	}
	oversize, err := client.EncodeBatch([]*floev1.Record{{Value: big[:20<<10]}}, floev1.Compression_COMPRESSION_NONE, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		b      []byte
		reason string
		parts  []string
	}{
		{"bad crc", func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }(), agent.ReasonInvalidBatch, []string{"CRC"}},
		{"bad magic", edit(func(b []byte) { b[16] = 1 }), agent.ReasonInvalidBatch, []string{"magic"}},
		{"truncated", good[:len(good)-5], agent.ReasonInvalidBatch, []string{"batch length"}},
		{"lying record count", edit(func(b []byte) { be.PutUint32(b[57:], 4); be.PutUint32(b[23:], 3) }), agent.ReasonInvalidBatch, []string{"after the last record"}},
		{"bad compression", edit(func(b []byte) { be.PutUint16(b[21:], 4) }), agent.ReasonInvalidBatch, []string{"zstd"}},
		{"transactional", edit(func(b []byte) { be.PutUint16(b[21:], 0x10) }), agent.ReasonInvalidBatch, []string{"transactional"}},
		{"two batches in one", append(bytes.Clone(good), good...), "", []string{"more than one record batch"}},
		{"record over the limit", oversize, agent.ReasonRecordTooLarge, []string{"record limit"}},
		{"decompression bomb", bomb, agent.ReasonRequestTooLarge, []string{"split it"}},
	}
	for _, c := range cases {
		// The bad batch is the second of the request, bound for
		// partition 1, after a good one: neither may be stored.
		_, err := h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{
			{Partition: 0, Batches: good}, {Partition: 1, Batches: c.b}}})
		wantStatus(t, c.name, err, codes.InvalidArgument, c.reason, append(c.parts, "batch 1 (partition 1)")...)
		// And over the stream, where only that request is refused.
		st, err := h.c.Log.ProduceBatchesStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&floev1.ProduceBatchesStreamRequest{RequestId: 7, Request: &floev1.ProduceBatchesRequest{Topic: "t",
			Partitions: []*floev1.PartitionBatches{{Partition: 1, Batches: c.b}}}}); err != nil {
			t.Fatal(err)
		}
		m, err := st.Recv()
		if err != nil || m.GetRequestId() != 7 || codes.Code(m.GetErrorCode()) != codes.InvalidArgument {
			t.Fatalf("%s over the stream: %v, %v", c.name, m, err)
		}
		_ = st.CloseSend()
	}
	time.Sleep(50 * time.Millisecond) // past the linger: a file would be written by now
	if n := objectCount(t, h.objects); n != 0 {
		t.Fatalf("%d objects stored after refused batches", n)
	}
	for p := int32(0); p < 2; p++ {
		f, err := h.c.Fetch(ctx, "t", p, 0, 0, 0)
		if err != nil || f.GetHighWatermark() != 0 {
			t.Fatalf("partition %d: high watermark %d, %v", p, f.GetHighWatermark(), err)
		}
	}
	// The same request with the good batches is taken.
	resp, err := h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{
		{Partition: 0, Batches: good}, {Partition: 1, Batches: good}, {Partition: 1, Batches: good}}})
	if err != nil || len(resp.GetResults()) != 3 || resp.GetResults()[2].GetBaseOffset() != int64(len(recs)) {
		t.Fatalf("good batches: %v, %v", resp, err)
	}
	if objectCount(t, h.objects) == 0 {
		t.Fatal("no object stored for good batches: the check above proves nothing")
	}
}

// An idempotent producer's retried batch gets its original offset, marked
// duplicate, and is stored once.
func TestIdempotentBatchRetryDeduplicated(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ip, err := h.c.Log.InitProducer(ctx, &floev1.InitProducerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recs := batchTestRecords()
	seq := int32(0)
	var bases []int64
	for i := range 3 {
		b, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_LZ4,
			&client.Idempotence{ProducerID: ip.GetProducerId(), ProducerEpoch: ip.GetProducerEpoch(), BaseSequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		req := &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}}
		first, err := h.c.Log.ProduceBatches(ctx, req)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		retry, err := h.c.Log.ProduceBatches(ctx, req)
		if err != nil {
			t.Fatalf("batch %d retry: %v", i, err)
		}
		f, r := first.GetResults()[0], retry.GetResults()[0]
		if f.GetDuplicate() || !r.GetDuplicate() || r.GetBaseOffset() != f.GetBaseOffset() {
			t.Fatalf("batch %d: first %v, retry %v", i, f, r)
		}
		bases = append(bases, f.GetBaseOffset())
		seq += int32(len(recs))
	}
	if fmt.Sprint(bases) != fmt.Sprint([]int64{0, 5, 10}) {
		t.Fatalf("base offsets %v", bases)
	}
	f, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || f.GetHighWatermark() != 15 {
		t.Fatalf("high watermark %d, %v", f.GetHighWatermark(), err)
	}
	// Producer id 0 was never issued.
	b, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_NONE, &client.Idempotence{ProducerID: 0, BaseSequence: 0})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.c.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Partition: 0, Batches: b}}})
	wantStatus(t, "producer id 0", err, codes.FailedPrecondition, agent.ReasonUnknownProducer)
}

// The client's Producer in batches mode answers like the per-record one:
// offsets and partitions of each record in request order, by key.
func TestProducerBatchesMode(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 4, nil); err != nil {
		t.Fatal(err)
	}
	for _, batches := range []bool{false, true} {
		var got []*floev1.ProduceResponse
		p, err := h.c.NewProducer(ctx, "t", client.ProducerOptions{Batches: batches, Compression: floev1.Compression_COMPRESSION_SNAPPY,
			OnResult: func(_ any, r *floev1.ProduceResponse) { got = append(got, r) }})
		if err != nil {
			t.Fatal(err)
		}
		var recs []*floev1.Record
		for i := range 40 {
			recs = append(recs, client.Value([]byte(fmt.Sprintf("key-%d", i)), []byte("v")))
		}
		if err := p.Send(-1, recs, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Send(2, recs[:3], nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
		p.Close()
		if len(got) != 2 {
			t.Fatalf("batches %v: %d answers", batches, len(got))
		}
		parts := got[0].GetPartitions()
		for i, part := range parts {
			want := kpartition.ForKey(recs[i].GetKey(), 4)
			if part != want {
				t.Fatalf("batches %v: record %d in partition %d, the agent's partitioner says %d", batches, i, part, want)
			}
		}
		if p2 := got[1].GetPartitions(); p2[0] != 2 || got[1].GetOffsets()[2] != got[1].GetOffsets()[0]+2 {
			t.Fatalf("batches %v: second send %v", batches, got[1])
		}
	}
	// Both runs stored the same records in the same partitions.
	for part := int32(0); part < 4; part++ {
		f, err := h.c.Fetch(ctx, "t", part, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		recs := f.GetRecords()
		if len(recs)%2 != 0 {
			t.Fatalf("partition %d: %d records", part, len(recs))
		}
		half := len(recs) / 2
		for i := range half {
			if !bytes.Equal(recs[i].GetKey(), recs[half+i].GetKey()) {
				t.Fatalf("partition %d: record %d key %q, batches run %q", part, i, recs[i].GetKey(), recs[half+i].GetKey())
			}
		}
	}
}

// On ProduceBatchesStream, a request over the request limit on the wire is
// refused by its id (the guard's codec does not decode it), and the next
// request of the stream is served.
func TestProduceBatchesStreamRefusesOneRequest(t *testing.T) {
	const limit = 64 << 10
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes = 16 << 10
		a.MaxRequestBytes = limit
	}})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	st, err := s.log.ProduceBatchesStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.CloseSend()
	huge := make([]byte, limit+96<<10) // over the request limit on the wire, under gRPC's; not even a batch: never decoded
	if err := st.Send(&floev1.ProduceBatchesStreamRequest{RequestId: 41, Request: &floev1.ProduceBatchesRequest{Topic: "t",
		Partitions: []*floev1.PartitionBatches{{Batches: huge}}}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil || m.GetRequestId() != 41 || codes.Code(m.GetErrorCode()) != codes.InvalidArgument ||
		!strings.Contains(m.GetErrorMessage(), "request limit") {
		t.Fatalf("oversize request: %v, %v", m, err)
	}
	b, err := client.EncodeBatch(batchTestRecords(), floev1.Compression_COMPRESSION_NONE, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&floev1.ProduceBatchesStreamRequest{RequestId: 42, Request: &floev1.ProduceBatchesRequest{Topic: "t",
		Partitions: []*floev1.PartitionBatches{{Batches: b}}}}); err != nil {
		t.Fatal(err)
	}
	m, err = st.Recv()
	if err != nil || m.GetRequestId() != 42 || m.GetErrorCode() != 0 || m.GetResponse().GetResults()[0].GetBaseOffset() != 0 {
		t.Fatalf("next request: %v, %v", m, err)
	}
}
