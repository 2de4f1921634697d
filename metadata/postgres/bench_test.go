package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata/metadatatest"
)

// BenchmarkCommitFile commits files of one batch per partition (see
// metadatatest.BenchCommitFile); p50-x-limit compares the median with a
// one-row INSERT round trip on the same server, measured in the same run.
func BenchmarkCommitFile(b *testing.B) {
	s, err := Open(context.Background(), testenv.Postgres(b), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	limit := rawCommitMedian(b, s, 500)
	b.Logf("limit: one-row INSERT round trip median %v", limit)
	metadatatest.BenchCommitFiles(b, s, limit)
}

// BenchmarkRawCommit is the limit: a one-row INSERT in its own implicit
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
	b.ReportMetric(float64(metadatatest.Percentile(times, 50))/float64(time.Millisecond), "p50-ms")
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
	return metadatatest.Percentile(times, 50)
}
