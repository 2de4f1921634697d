package compactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// BenchmarkOrphanPass times a reconciliation pass over 1000 objects on
// PostgreSQL and the S3 server (half of them known to the metadata, none
// old enough to delete, spread over the 256 key shards). x-limit compares
// it with one listing of the same objects under the common prefix, in the
// same run.
func BenchmarkOrphanPass(b *testing.B) {
	const objects = 1000
	e := pgEnv(b)
	ctx := context.Background()
	tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "bench", Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	for i := range objects {
		if i%2 == 0 {
			write(b, e, batch(tp.ID, 0, 1))
		} else {
			put(b, e, batch(tp.ID, 0, 1))
		}
	}
	start := time.Now()
	n := 0
	if err := e.store.List(ctx, "v1/files/", func(objectstore.ObjectInfo) error { n++; return nil }); err != nil || n != objects {
		b.Fatalf("list: %d objects, %v", n, err)
	}
	limit := time.Since(start)
	c := newCompactor(b, e, "bench", func(c *compactor.Config) {
		c.OrphanPage, c.OrphanShards, c.OrphanAge, c.TopicMetrics = 2*objects, 256, time.Hour, false
	})
	b.ResetTimer()
	var total time.Duration
	for range b.N {
		start := time.Now()
		r := runOnce(b, c)
		total += time.Since(start)
		if r.ObjectsListed != objects || r.OrphansFound != objects/2 || r.OrphansDeleted != 0 {
			b.Fatalf("pass: %+v", r)
		}
	}
	per := total / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/1000-objects")
	b.ReportMetric(float64(per)/float64(limit), "x-limit")
	b.Logf("limit: one listing of %d objects took %v", objects, limit)
}
