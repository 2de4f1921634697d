package s3store_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/floe-broker/floe/objectstore"
)

// benchObjectSize is the size of one object in the raw PUT/GET benchmarks:
// the batcher's default max_file_bytes.
const benchObjectSize = 8 << 20

// BenchmarkPut measures raw sequential PUT throughput of 8 MiB objects to
// versitygw: the limit that produce benchmarks are compared with.
func BenchmarkPut(b *testing.B) {
	s := newStore(b, configFor(b))
	data := make([]byte, benchObjectSize)
	rand.New(rand.NewSource(1)).Read(data)
	ctx := context.Background()
	b.SetBytes(benchObjectSize)
	for i := 0; b.Loop(); i++ {
		if err := s.Put(ctx, fmt.Sprintf("bench/put/%d", i), data, objectstore.PutOptions{IfAbsent: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet measures raw sequential GET throughput of whole 8 MiB
// objects from versitygw.
func BenchmarkGet(b *testing.B) {
	s := newStore(b, configFor(b))
	data := make([]byte, benchObjectSize)
	rand.New(rand.NewSource(1)).Read(data)
	ctx := context.Background()
	const objects = 4
	for i := range objects {
		if err := s.Put(ctx, fmt.Sprintf("bench/get/%d", i), data, objectstore.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(benchObjectSize)
	for i := 0; b.Loop(); i++ {
		got, err := s.Get(ctx, fmt.Sprintf("bench/get/%d", i%objects), 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != benchObjectSize {
			b.Fatalf("got %d bytes", len(got))
		}
	}
}
