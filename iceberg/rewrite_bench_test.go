package iceberg

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
)

// BenchmarkRewrite measures RewriteSmallFiles of a table made by 32
// appends of 2,048 rows (the rows of BenchmarkAppend, 8 partitions over
// two days: 64k rows in about 64 small files) against one Append of the
// same 64k rows to another table, in the same run: rewrite-rows/s,
// append-rows/s, rewrite/append (time ratio), files-before and
// files-after.
func BenchmarkRewrite(b *testing.B) {
	b.Run("sqlite-dir", func(b *testing.B) { benchRewrite(b, DefaultSQLiteConfig(b.TempDir())) })
	b.Run("postgres-s3", func(b *testing.B) {
		s3 := testenv.S3(b)
		cfg := DefaultPostgresConfig(testenv.Postgres(b), s3.Bucket)
		cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKey, cfg.S3SecretKey = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey
		benchRewrite(b, cfg)
	})
}

func benchRewrite(b *testing.B, cfg Config) {
	const (
		appends = 32
		per     = 2048
	)
	ctx := context.Background()
	w, err := Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var rewriteTime, appendTime time.Duration
	var before, after int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		small, whole := fmt.Sprintf("small-%d", i), fmt.Sprintf("whole-%d", i)
		from := Watermark{}
		var all []Row
		for a := range appends {
			rows, _, _ := benchRows(per, int64(a*per/8))
			want := Watermark{}
			for _, r := range rows {
				want[r.Partition] = max(want[r.Partition], r.Offset+1)
			}
			if _, err := w.Append(ctx, small, rows, from.Merge(want)); err != nil {
				b.Fatal(err)
			}
			from = from.Merge(want)
			all = append(all, rows...)
		}
		st, err := w.Describe(ctx, small)
		if err != nil {
			b.Fatal(err)
		}
		before += st.DataFiles
		slices.SortFunc(all, func(a, b Row) int {
			return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
		})
		b.StartTimer()
		start := time.Now()
		res, err := w.RewriteSmallFiles(ctx, small, RewriteOptions{MinFiles: 1})
		rewriteTime += time.Since(start)
		if err != nil || res.SnapshotID == 0 {
			b.Fatalf("rewrite: %+v, %v", res, err)
		}
		start = time.Now()
		if _, err := w.Append(ctx, whole, all, from); err != nil {
			b.Fatal(err)
		}
		appendTime += time.Since(start)
		b.StopTimer()
		if st, err = w.Describe(ctx, small); err != nil || st.Rows != appends*per {
			b.Fatalf("after the rewrite: %+v, %v", st, err)
		}
		after += st.DataFiles
		b.StartTimer()
	}
	rows := float64(b.N * appends * per)
	b.ReportMetric(rows/rewriteTime.Seconds(), "rewrite-rows/s")
	b.ReportMetric(rows/appendTime.Seconds(), "append-rows/s")
	b.ReportMetric(rewriteTime.Seconds()/appendTime.Seconds(), "rewrite/append")
	b.ReportMetric(float64(before)/float64(b.N), "files-before")
	b.ReportMetric(float64(after)/float64(b.N), "files-after")
}
