package bench

import (
	"encoding/binary"
	"testing"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// BenchmarkProducerRecords is the harness's own work per request of 10
// 1 KiB records on the batch data plane: the records, then their batch
// (as batchStream.send encodes it). "fresh" makes every key, value and
// record anew, as the harness did before the arena; "arena" reuses them.
func BenchmarkProducerRecords(b *testing.B) {
	batch := &Batch{Intended: make([]int64, 10)}
	for name, reuse := range map[string]bool{"fresh": false, "arena": true} {
		b.Run(name, func(b *testing.B) {
			a := recordArena{size: 1024}
			b.ReportAllocs()
			b.SetBytes(10 * 1024)
			for i := 0; i < b.N; i++ {
				batch.First = int64(i * 10)
				var recs []*floev1.Record
				if reuse {
					recs = a.records(1, batch)
				} else {
					recs = freshRecords(1, 1024, batch)
				}
				if _, err := client.EncodeBatch(recs, floev1.Compression_COMPRESSION_NONE, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// freshRecords is how the harness made its records before recordArena.
func freshRecords(id uint64, size int, b *Batch) []*floev1.Record {
	recs := make([]*floev1.Record, len(b.Intended))
	for i, t := range b.Intended {
		idx := uint64(b.First) + uint64(i)
		key := make([]byte, 8)
		binary.BigEndian.PutUint64(key, id<<40|idx)
		recs[i] = &floev1.Record{Key: key, Value: MakeValue(size, t, idx)}
	}
	return recs
}
