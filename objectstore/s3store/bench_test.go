package s3store_test

import (
	"testing"

	"github.com/floe-broker/floe/objectstore/objtest"
)

// BenchmarkPut measures raw PUT throughput of 8 MiB objects to versitygw:
// the limit that produce benchmarks are compared with.
func BenchmarkPut(b *testing.B) { objtest.BenchPut(b, newStore(b, configFor(b))) }

// BenchmarkGet measures raw GET throughput of 8 MiB objects from versitygw.
func BenchmarkGet(b *testing.B) { objtest.BenchGet(b, newStore(b, configFor(b))) }
