package compactor_test

import (
	mrand "math/rand/v2"
	"testing"

	"github.com/floe-broker/floe/compactor"
)

// TestIcebergPassBound: a pass reads at most IcebergMaxBytes of a table's
// batches whatever its partition count (32 partitions, batches of about
// 500 bytes, a 4 KiB bound: each partition taking one batch read 16 KiB),
// and passes after passes append every record, once.
func TestIcebergPassBound(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		const bound = 4096
		rnd := mrand.New(mrand.NewPCG(41, 42))
		tp := createTopic(t, e.env, "wide", 32, map[string]string{"iceberg.lag": "0"})
		parts := make([]int32, 32)
		for i := range parts {
			parts[i] = int32(i)
		}
		want := produced{}
		for range 2 {
			produce(t, e.env, tp.ID, parts, 4, want, rnd)
		}
		rc := &readCounter{Store: e.store}
		w, _ := e.writer(t)
		c := iceCompactor(t, iceEnv{env: env{meta: e.meta, store: rc}, cfg: e.cfg}, "bound", w, func(c *compactor.Config) {
			c.IcebergMaxBytes = bound
			c.MergeSmallBytes, c.CompactMaxBytes = 0, 0
		})
		rows := 0
		for pass := 0; pass < 200; pass++ {
			r := runOnce(t, c)
			read, _, _ := rc.take()
			if read > bound {
				t.Fatalf("pass %d read %d bytes of batches, over the %d bound", pass, read, bound)
			}
			rows += r.IcebergRows
			if r.IcebergRows == 0 {
				break
			}
		}
		n := 0
		for _, p := range want {
			n += len(p)
		}
		if rows != n {
			t.Fatalf("passes appended %d rows, want %d", rows, n)
		}
		checkTable(t, w, tp.Name, want)
	})
}
