package objtest

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/floe-broker/floe/objectstore"
)

// BenchObjectSize is the size of one object in the raw PUT/GET benchmarks:
// the batcher's default max_file_bytes.
const BenchObjectSize = 8 << 20

// BenchPut measures raw sequential if-absent PUT throughput of
// BenchObjectSize objects: the limit produce benchmarks are compared with.
func BenchPut(b *testing.B, s objectstore.Store) {
	data := make([]byte, BenchObjectSize)
	rand.New(rand.NewSource(1)).Read(data)
	ctx := context.Background()
	b.SetBytes(BenchObjectSize)
	for i := 0; b.Loop(); i++ {
		if err := s.Put(ctx, fmt.Sprintf("bench/put/%02x/%d", i%256, i), data, objectstore.PutOptions{IfAbsent: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchGet measures raw sequential GET throughput of whole
// BenchObjectSize objects.
func BenchGet(b *testing.B, s objectstore.Store) {
	data := make([]byte, BenchObjectSize)
	rand.New(rand.NewSource(1)).Read(data)
	ctx := context.Background()
	const objects = 4
	for i := range objects {
		if err := s.Put(ctx, fmt.Sprintf("bench/get/%d", i), data, objectstore.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(BenchObjectSize)
	for i := 0; b.Loop(); i++ {
		got, err := s.Get(ctx, fmt.Sprintf("bench/get/%d", i%objects), 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != BenchObjectSize {
			b.Fatalf("got %d bytes", len(got))
		}
	}
}
