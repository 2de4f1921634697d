package bench

import (
	"testing"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// BenchmarkProducerRecords is the harness's own work per request of 10
// 1 KiB records on the batch data plane: the records, then their batch
// (as batchStream.send encodes it). "fresh" makes every key and value
// anew, as the harness did before the arena; "arena" reuses them.
func BenchmarkProducerRecords(b *testing.B) {
	batch := &Batch{Intended: make([]int64, 10)}
	for name, reuse := range map[string]bool{"fresh": false, "arena": true} {
		b.Run(name, func(b *testing.B) {
			a := recordArena{size: 1024}
			b.ReportAllocs()
			b.SetBytes(10 * 1024)
			for i := 0; i < b.N; i++ {
				if !reuse {
					a = recordArena{size: 1024}
				}
				batch.First = int64(i * 10)
				recs := a.records(1, batch)
				if _, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_NONE, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
