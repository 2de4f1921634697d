package metadatatest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// BenchCommitFile commits, per iteration, one file holding one batch (10
// records, 1000 bytes) for each partition of a new topic of that many
// partitions; idempotent batches carry one producer's next sequences.
// Besides ns/op it reports ms/op, the median and 99th percentile commit time, the
// median per batch, and the median's ratio to limit (the backend's
// cheapest write round trip, measured by the caller in the same run; 0
// skips the ratio).
func BenchCommitFile(b *testing.B, s metadata.Store, partitions int32, idempotent bool, limit time.Duration) {
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: fmt.Sprintf("bench-%d", time.Now().UnixNano()), Partitions: partitions})
	if err != nil {
		b.Fatal(err)
	}
	pid, _, err := s.InitProducer(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f := metadata.FileCommit{Size: int64(partitions) * 1000}
	for p := range partitions {
		f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: tp.ID, Partition: p, ByteOffset: int64(p) * 1000,
			ByteLength: 1000, RecordCount: 10, MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: metadata.NoSequence})
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		f.Key = fmt.Sprintf("bench/%d/%d", tp.ID, i)
		if idempotent {
			for j := range f.Batches {
				f.Batches[j].ProducerID, f.Batches[j].BaseSequence = pid, int32(i*10)
			}
		}
		start := time.Now()
		res, err := s.CommitFile(ctx, f)
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if res[0].Err != nil || res[0].Duplicate {
			b.Fatalf("batch refused: %+v", res[0])
		}
	}
	b.StopTimer()
	var total time.Duration
	for _, d := range times {
		total += d
	}
	b.ReportMetric(ms(total)/float64(len(times)), "ms/op")
	p50, p99 := Percentile(times, 50), Percentile(times, 99)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(float64(p50.Microseconds())/float64(partitions), "p50-µs/batch")
	if limit > 0 {
		b.ReportMetric(float64(p50)/float64(limit), "p50-x-limit")
	}
}

// Percentile returns the p-th percentile (0..100) of d.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchCommitFiles runs BenchCommitFile for files of 1, 100 and 1000
// partitions and 1000 idempotent ones, against the limit given.
func BenchCommitFiles(b *testing.B, s metadata.Store, limit time.Duration) {
	for _, bc := range []struct {
		partitions int32
		idempotent bool
	}{{1, false}, {100, false}, {1000, false}, {1000, true}} {
		name := fmt.Sprintf("partitions=%d", bc.partitions)
		if bc.idempotent {
			name += "/idempotent"
		}
		b.Run(name, func(b *testing.B) { BenchCommitFile(b, s, bc.partitions, bc.idempotent, limit) })
	}
}
