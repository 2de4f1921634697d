package sqlite

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata/metadatatest"
)

// BenchmarkCommitFile commits files of one batch per partition (see
// metadatatest.BenchCommitFile); p50-x-limit compares the median with a
// one-row INSERT transaction on the same database, measured in the same run.
func BenchmarkCommitFile(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	limit := rawCommitMedian(b, s, 500)
	b.Logf("limit: one-row INSERT transaction median %v", limit)
	metadatatest.BenchCommitFiles(b, s, limit)
}

// rawCommitMedian measures the median one-row INSERT write transaction.
func rawCommitMedian(tb testing.TB, s *Store, n int) time.Duration {
	ctx := context.Background()
	if _, err := s.w.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, v INTEGER)"); err != nil {
		tb.Fatal(err)
	}
	times := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		err := s.write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO bench_raw (v) VALUES (?)", i)
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	return metadatatest.Percentile(times, 50)
}
