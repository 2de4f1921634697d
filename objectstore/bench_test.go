package objectstore_test

import (
	"testing"

	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/objtest"
)

func newBenchDir(b *testing.B) objectstore.Store {
	s, err := objectstore.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPut measures raw PUT throughput (fsync included) of 8 MiB
// objects to a Dir store.
func BenchmarkPut(b *testing.B) { objtest.BenchPut(b, newBenchDir(b)) }

// BenchmarkGet measures raw GET throughput of 8 MiB objects from a Dir store.
func BenchmarkGet(b *testing.B) { objtest.BenchGet(b, newBenchDir(b)) }
