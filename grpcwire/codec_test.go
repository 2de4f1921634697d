package grpcwire

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// fakeBatch is a stored-batch-shaped byte string of n bytes (base offset 0).
func fakeBatch(n int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	binary.BigEndian.PutUint64(b, 0)
	return b
}

// withBase is batch with its base offset set.
func withBase(batch []byte, base int64) []byte {
	out := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(out, uint64(base))
	return out
}

// sizes cover copied batches (≤ copyMax) and referenced ones.
var sizes = []int{61, 200, copyMax, copyMax + 1, 70_000, 300}

func buildBatches(release func()) (*Batches, []byte) {
	bs := NewBatches(len(sizes), release)
	var want []byte
	base := int64(1000)
	for i, n := range sizes {
		b := fakeBatch(n, byte(i+1))
		bs.Append(base, b)
		want = append(want, withBase(b, base)...)
		base += 17
	}
	return bs, want
}

// TestMarshalMatchesProto is the golden test: the hand-encoded answers are
// byte for byte what proto.Marshal writes for the same message.
func TestMarshalMatchesProto(t *testing.T) {
	c := NewCodec(nil)
	for _, hw := range []int64{0, 1, 1 << 40, math.MaxInt64, -1} {
		for _, part := range []int32{0, 3, math.MaxInt32, -1} {
			for _, next := range []int64{0, 5, -7} {
				bs, want := buildBatches(nil)
				sub := &floev1.SubscribeResponse{Partition: part, HighWatermark: hw, NextOffset: next}
				got := marshal(t, c, &SubscribeAnswer{Resp: sub, Batches: bs})
				sub.Batches = want
				golden(t, got, sub)
				golden(t, marshal(t, c, sub), sub) // a plain message with batches: referenced

				bs, want = buildBatches(nil)
				fr := &floev1.FetchResponse{HighWatermark: hw, LogStartOffset: int64(part), NextOffset: next}
				got = marshal(t, c, &FetchAnswer{Resp: fr, Batches: bs})
				fr.Batches = want
				golden(t, got, fr)
				golden(t, marshal(t, c, fr), fr)

				// An empty answer: no batches field, like proto.Marshal.
				empty := &floev1.SubscribeResponse{Partition: part, HighWatermark: hw, NextOffset: next}
				golden(t, marshal(t, c, &SubscribeAnswer{Resp: empty, Batches: NewBatches(0, nil)}), empty)
			}
		}
	}
	// Messages off the batches path: protobuf's own encoding.
	recs := &floev1.SubscribeResponse{Partition: 1, Records: []*floev1.Record{{Offset: 4, Value: []byte("v")}}, Batches: []byte("x")}
	golden(t, marshal(t, c, recs), recs)
	big := &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Partition: 2, Batches: bytes.Repeat([]byte{7}, 3<<20)}}}
	golden(t, marshal(t, c, big), big)
}

func marshal(t *testing.T, c *Codec, v any) []byte {
	t.Helper()
	bs, err := c.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%T): %v", v, err)
	}
	defer bs.Free()
	return bs.Materialize()
}

func golden(t *testing.T, got []byte, m proto.Message) {
	t.Helper()
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%T: hand encoding (%d bytes) differs from proto.Marshal (%d bytes)", m, len(got), len(want))
	}
}

// TestReleaseAfterFrames: the release runs once gRPC has freed every
// segment (written the last frame), never before, and exactly once.
func TestReleaseAfterFrames(t *testing.T) {
	released := 0
	bs, _ := buildBatches(func() { released++ })
	out, err := NewCodec(nil).Marshal(&SubscribeAnswer{Resp: &floev1.SubscribeResponse{Partition: 1}, Batches: bs})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Reader() // what the transport holds while it writes
	out.Free()        // what SendMsg drops once the transport has the message
	if released != 0 {
		t.Fatalf("released before the frames were written")
	}
	buf := make([]byte, 16<<10)
	for {
		n, err := r.Read(buf)
		if n == 0 || err != nil {
			break
		}
		if r.Remaining() > 0 && released != 0 {
			t.Fatalf("released with %d bytes still to write", r.Remaining())
		}
	}
	r.Close()
	if released != 1 {
		t.Fatalf("released %d times, want 1", released)
	}
	if _, err := NewCodec(nil).Marshal(&SubscribeAnswer{Resp: &floev1.SubscribeResponse{}, Batches: bs}); err == nil {
		t.Fatal("a sent answer marshalled again")
	}
	bs.Drop()
	if released != 1 {
		t.Fatalf("Drop after the send released again")
	}

	// Dropped without being sent: released at once; only copied batches:
	// released when marshalled.
	dropped := 0
	bs, _ = buildBatches(func() { dropped++ })
	bs.Drop()
	bs.Drop()
	small := 0
	sb := NewBatches(1, func() { small++ })
	sb.Append(3, fakeBatch(100, 1))
	if _, err := NewCodec(nil).Marshal(&FetchAnswer{Resp: &floev1.FetchResponse{}, Batches: sb}); err != nil {
		t.Fatal(err)
	}
	if dropped != 1 || small != 1 {
		t.Fatalf("dropped answer released %d times, copied-only answer %d times; want 1 and 1", dropped, small)
	}
}

// TestUnmarshalAliases: the client's decoding equals protobuf's and its
// batches point into the received buffer.
func TestUnmarshalAliases(t *testing.T) {
	c := NewCodec(nil)
	_, want := buildBatches(nil)
	src := &floev1.SubscribeResponse{Partition: 9, HighWatermark: 77, NextOffset: 70, Batches: want}
	wire, err := proto.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	var got floev1.SubscribeResponse
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, src) {
		t.Fatalf("decoded %v, want %v", &got, src)
	}
	if &got.Batches[0] != &wire[len(wire)-len(want)-2] {
		// batches is field 5, then next_offset (field 6: 2 bytes).
		t.Fatalf("batches were copied, not referenced")
	}
	// Split over frames (one copy, then referenced), and a record answer.
	fr := &floev1.FetchResponse{HighWatermark: 5, Batches: want, NextOffset: 3}
	wire, _ = proto.Marshal(fr)
	var gotF floev1.FetchResponse
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:10]), mem.SliceBuffer(wire[10:])}, &gotF); err != nil || !proto.Equal(&gotF, fr) {
		t.Fatalf("split FetchResponse: %v, %v", err, &gotF)
	}
	recs := &floev1.FetchResponse{Records: []*floev1.Record{{Offset: 1, Key: []byte("k")}}, HighWatermark: 2}
	wire, _ = proto.Marshal(recs)
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &gotF); err != nil || !proto.Equal(&gotF, recs) {
		t.Fatalf("record FetchResponse: %v, %v", err, &gotF)
	}
}

// FuzzUnmarshal: on any input, the aliasing decoder agrees with protobuf
// (same error or not, same message) and never panics.
func FuzzUnmarshal(f *testing.F) {
	_, want := buildBatches(nil)
	for _, m := range []proto.Message{
		&floev1.SubscribeResponse{Partition: 9, HighWatermark: 77, NextOffset: 70, Batches: want},
		&floev1.SubscribeResponse{Records: []*floev1.Record{{Offset: 1}}, Assignment: &floev1.GroupAssignment{MemberId: "m"}},
		&floev1.FetchResponse{HighWatermark: 5, Batches: []byte("abc")},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b, true)
		f.Add(b, false)
	}
	f.Add([]byte{0x2a, 0x05, 1, 2}, true) // batches field cut short
	c := NewCodec(nil)
	f.Fuzz(func(t *testing.T, b []byte, sub bool) {
		var got, ref proto.Message = &floev1.FetchResponse{}, &floev1.FetchResponse{}
		if sub {
			got, ref = &floev1.SubscribeResponse{}, &floev1.SubscribeResponse{}
		}
		err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append([]byte(nil), b...))}, got)
		rerr := proto.Unmarshal(b, ref)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("codec error %v, protobuf error %v", err, rerr)
		}
		if err == nil && !proto.Equal(got, ref) {
			t.Fatalf("codec decoded %v, protobuf %v", got, ref)
		}
	})
}

func TestPoolTiers(t *testing.T) {
	p := NewPool()
	for _, n := range []int{0, 1, 256, 257, 1 << 20, 16 << 20, 16<<20 + 1} {
		bp := p.Get(n)
		if len(*bp) != n {
			t.Fatalf("Get(%d) has length %d", n, len(*bp))
		}
		p.Put(bp)
	}
	bp := p.Get(1000)
	(*bp)[0] = 42
	p.Put(bp)
	if got := p.Get(600); cap(*got) != 1024 {
		t.Fatalf("Get(600) capacity %d, want the 1 KiB tier", cap(*got))
	}
}
