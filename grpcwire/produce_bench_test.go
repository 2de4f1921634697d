package grpcwire

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// BenchmarkUnmarshalProduceBatches compares the hand decoder (batches
// aliased) with protobuf's (batches copied) on a request of 16 partitions
// with one batch of -size bytes each, received as one buffer and, as
// gRPC delivers a large message, as frames of 16 KiB.
func BenchmarkUnmarshalProduceBatches(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		parts := make([][]byte, 16)
		for i := range parts {
			parts[i] = bytes.Repeat([]byte{byte(i)}, size)
		}
		enc, err := proto.Marshal(produceReq(1, "bench", parts...))
		if err != nil {
			b.Fatal(err)
		}
		pool := NewPool()
		b.Run(fmt.Sprintf("size=%d/aliased", size), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				in := NewProduceBatchesIn()
				if err := UnmarshalProduceBatches(mem.BufferSlice{mem.SliceBuffer(enc)}, pool, in); err != nil {
					b.Fatal(err)
				}
				in.Lend().Release()
			}
		})
		frames := split(enc, 16384)
		b.Run(fmt.Sprintf("size=%d/frames", size), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				in := NewProduceBatchesIn()
				if err := UnmarshalProduceBatches(frames, pool, in); err != nil {
					b.Fatal(err)
				}
				in.Lend().Release()
			}
		})
		b.Run(fmt.Sprintf("size=%d/protobuf", size), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				m := &floev1.ProduceBatchesStreamRequest{}
				if err := proto.Unmarshal(enc, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
