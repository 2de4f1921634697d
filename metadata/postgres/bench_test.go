package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
)

// BenchmarkCommitFile commits files holding one batch per partition of a
// topic with that many partitions. Besides ns/op it reports the median and
// 99th percentile commit time, the time per batch, and the median's ratio
// to the limit: a one-row INSERT round trip on the same server, measured
// in the same run.
func BenchmarkCommitFile(b *testing.B) {
	dsn := testenv.Postgres(b)
	ctx := context.Background()
	s, err := Open(ctx, dsn, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	raw := rawCommitMedian(b, s, 300)
	for _, bc := range []struct {
		partitions int32
		idempotent bool
	}{{1, false}, {100, false}, {1000, false}, {1000, true}} {
		name := fmt.Sprintf("partitions=%d", bc.partitions)
		if bc.idempotent {
			name += "/idempotent"
		}
		b.Run(name, func(b *testing.B) {
			tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: fmt.Sprintf("bench-%d", time.Now().UnixNano()), Partitions: bc.partitions})
			if err != nil {
				b.Fatal(err)
			}
			pid, _, err := s.InitProducer(ctx)
			if err != nil {
				b.Fatal(err)
			}
			f := metadata.FileCommit{Size: int64(bc.partitions) * 1000}
			for p := range bc.partitions {
				f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: tp.ID, Partition: p, ByteOffset: int64(p) * 1000,
					ByteLength: 1000, RecordCount: 10, MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: metadata.NoSequence})
			}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				f.Key = fmt.Sprintf("bench/%d/%d", tp.ID, i)
				if bc.idempotent {
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
			p50, p99 := percentile(times, 50), percentile(times, 99)
			b.ReportMetric(ms(p50), "p50-ms")
			b.ReportMetric(ms(p99), "p99-ms")
			b.ReportMetric(float64(p50.Microseconds())/float64(bc.partitions), "p50-µs/batch")
			b.ReportMetric(float64(p50)/float64(raw), "p50-x-raw")
		})
	}
}

// BenchmarkRawCommit is the limit: one one-row INSERT in its own implicit
// transaction, one round trip.
func BenchmarkRawCommit(b *testing.B) {
	s, err := Open(context.Background(), testenv.Postgres(b), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	createRawTable(b, s)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := s.pool.Exec(context.Background(), "INSERT INTO bench_raw (v) VALUES ($1)", int64(i)); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(times, 50)), "p50-ms")
}

func createRawTable(tb testing.TB, s *Store) {
	if _, err := s.pool.Exec(context.Background(), "CREATE TABLE IF NOT EXISTS bench_raw (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v bigint)"); err != nil {
		tb.Fatal(err)
	}
}

// rawCommitMedian measures the median one-row INSERT round trip.
func rawCommitMedian(tb testing.TB, s *Store, n int) time.Duration {
	createRawTable(tb, s)
	times := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if _, err := s.pool.Exec(context.Background(), "INSERT INTO bench_raw (v) VALUES ($1)", int64(i)); err != nil {
			tb.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	return percentile(times, 50)
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
