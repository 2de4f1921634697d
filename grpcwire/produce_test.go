package grpcwire

import (
	"bytes"
	"testing"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

func produceReq(id uint64, topic string, parts ...[]byte) *floev1.ProduceBatchesStreamRequest {
	r := &floev1.ProduceBatchesRequest{Topic: topic}
	for i, b := range parts {
		r.Partitions = append(r.Partitions, &floev1.PartitionBatches{Partition: int32(i), Batches: b})
	}
	return &floev1.ProduceBatchesStreamRequest{RequestId: id, Request: r}
}

// split cuts b into buffers of at most n bytes, as gRPC's frames do.
func split(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, mem.SliceBuffer(bytes.Clone(b[:k])))
		b = b[k:]
	}
	return out
}

// poisonPool is a buffer pool that overwrites what is given back to it: a
// buffer freed while something still reads it shows as changed bytes.
type poisonPool struct{}

func (poisonPool) Get(n int) *[]byte {
	b := make([]byte, n, max(n, 4096)) // above gRPC's pooling threshold
	return &b
}

func (poisonPool) Put(b *[]byte) {
	for i := range *b {
		(*b)[i] = 0xee
	}
}

// splitPooled is split with each frame a buffer of poisonPool.
func splitPooled(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		f := poisonPool{}.Get(k)
		copy(*f, b[:k])
		out = append(out, mem.NewBuffer(f, poisonPool{}))
		b = b[k:]
	}
	return out
}

// within reports whether s lies inside buf's bytes.
func within(s, buf []byte) bool {
	if len(s) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&s[0])), uintptr(unsafe.Pointer(&buf[0]))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(buf))
}

// The batches of a plain request point into the received buffer (one
// buffer: that one; several: one copy from the pool), and the message is
// the one protobuf decodes; the buffer stays held until the Lender's last
// Release.
func TestUnmarshalProduceBatchesAliases(t *testing.T) {
	want := produceReq(7, "orders", bytes.Repeat([]byte{1}, 3000), nil, bytes.Repeat([]byte{2}, 70000))
	enc, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, frame := range []int{len(enc), 16384, 1000} {
		data := splitPooled(enc, frame)
		in := NewProduceBatchesIn()
		if err := UnmarshalProduceBatches(data, poisonPool{}, in); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(in.ProduceBatchesStreamRequest, want) {
			t.Fatalf("frames of %d: decoded %v, want %v", frame, in.ProduceBatchesStreamRequest, want)
		}
		l := in.Lend()
		if l == nil {
			t.Fatalf("frames of %d: nothing lent", frame)
		}
		if in.Lend() != nil {
			t.Fatal("Lend twice gave the buffer twice")
		}
		held := l.buf.ReadOnlyData()
		for _, pb := range in.GetRequest().GetPartitions() {
			if len(pb.Batches) > 0 && !within(pb.Batches, held) {
				t.Fatalf("frames of %d: partition %d's batches were copied, not aliased", frame, pb.Partition)
			}
			if len(pb.Batches) != cap(pb.Batches) {
				t.Fatal("batches not capped: an append would write into the buffer")
			}
		}
		data.Free() // gRPC's own hold
		// The data still reads right while the Lender holds the buffer
		// (poisonPool overwrites what is given back).
		same := func() bool {
			return bytes.Equal(in.GetRequest().GetPartitions()[2].GetBatches(), want.Request.Partitions[2].Batches)
		}
		if !same() {
			t.Fatalf("frames of %d: batches changed while held", frame)
		}
		l.Hold()
		l.Release()
		if !same() {
			t.Fatalf("frames of %d: batches changed while one holder is left", frame)
		}
		l.Release()
		if same() {
			t.Fatalf("frames of %d: the last Release did not give the buffer back", frame)
		}
	}
}

// What the hand decoder does not take (unknown fields, merged messages,
// bad UTF-8, malformed bytes) gives exactly protobuf's result.
func TestUnmarshalProduceBatchesAsProtobuf(t *testing.T) {
	plain, _ := proto.Marshal(produceReq(1, "t", []byte("abc")))
	second, _ := proto.Marshal(produceReq(2, "u", []byte("defg"), []byte("h")))
	unknown := protowire.AppendVarint(protowire.AppendTag(bytes.Clone(plain), 9, protowire.VarintType), 5)
	badUTF8 := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff, 0xfe}))
	cases := map[string][]byte{
		"plain":            plain,
		"empty":            nil,
		"merged":           append(bytes.Clone(plain), second...),
		"unknown field":    unknown,
		"bad utf8 topic":   badUTF8,
		"truncated":        plain[:len(plain)-1],
		"wrong wire type":  protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1),
		"negative varint":  protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1<<63),
		"partition varint": mustPartition(-3),
	}
	for name, b := range cases {
		checkAsProtobuf(t, name, b)
	}
}

func mustPartition(p int32) []byte {
	b, _ := proto.Marshal(&floev1.ProduceBatchesStreamRequest{Request: &floev1.ProduceBatchesRequest{
		Partitions: []*floev1.PartitionBatches{{Partition: p, Batches: []byte{1, 2}}}}})
	return b
}

// checkAsProtobuf decodes b received whole and in frames of 1, 7 and 300
// bytes (buffers of poisonPool), and compares each with protobuf's result.
func checkAsProtobuf(t *testing.T, name string, b []byte) {
	t.Helper()
	want := &floev1.ProduceBatchesStreamRequest{}
	werr := proto.Unmarshal(b, want)
	for _, frame := range []int{max(len(b), 1), 1, 7, 300} {
		in := NewProduceBatchesIn()
		in.RequestId = 99 // a reused message: nothing of it survives
		err := UnmarshalProduceBatches(splitPooled(b, frame), poisonPool{}, in)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s, frames of %d: error %v, protobuf's %v", name, frame, err, werr)
		}
		if err == nil && !proto.Equal(in.ProduceBatchesStreamRequest, want) {
			t.Fatalf("%s, frames of %d: decoded %v, protobuf %v", name, frame, in.ProduceBatchesStreamRequest, want)
		}
		if l := in.Lend(); l != nil {
			l.Release()
		}
	}
}

func FuzzUnmarshalProduceBatches(f *testing.F) {
	plain, _ := proto.Marshal(produceReq(1, "t", []byte("abc"), bytes.Repeat([]byte{9}, 300)))
	f.Add(plain)
	f.Add(mustPartition(5))
	f.Fuzz(func(t *testing.T, b []byte) { checkAsProtobuf(t, "fuzz", b) })
}
