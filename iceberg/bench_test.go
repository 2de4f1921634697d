package iceberg

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icegoio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kbatch"
)

// benchRows returns n rows over 8 partitions from offset from on: a
// 16-byte key, a 256-byte value (half random, half repeated, as JSON
// compresses), one header, timestamps over two days.
func benchRows(n int, from int64) ([]Row, Watermark, int64) {
	rnd := rand.New(rand.NewPCG(uint64(from), 1))
	rows := make([]Row, n)
	wm := Watermark{}
	base := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)
	var payload int64
	per := n / 8
	for i := range rows {
		p := int32(i / per)
		off := from + int64(i%per)
		v := make([]byte, 256)
		for j := range 128 {
			v[j] = byte(rnd.IntN(256))
		}
		copy(v[128:], `{"kind":"order","status":"created","currency":"EUR","items":[{"sku":"A-1","qty":1}],"note":"x"}                                  `)
		rows[i] = Row{Partition: p, Offset: off,
			Timestamp:  base.Add(time.Duration(off) * time.Second),
			AppendTime: base.Add(time.Duration(off)*time.Second + time.Millisecond),
			Key:        fmt.Appendf(nil, "customer-%07d", rnd.IntN(1e6)),
			Value:      v,
			Headers:    []kbatch.Header{{Key: "source", Value: []byte("bench")}},
		}
		wm[p] = off + 1
		payload += int64(len(rows[i].Key) + len(rows[i].Value) + 6 + 5 + 4 + 8 + 8 + 8)
	}
	return rows, wm, payload
}

// BenchmarkAppend measures Writer.Append (Arrow, Parquet with zstd,
// manifests, one snapshot committed) against writing the same rows
// straight to one Parquet file with arrow-go (zstd) in the same
// warehouse, the least the table costs, in the same run:
// append-rows/s, append-MB/s, parquet-rows/s, parquet-MB/s and
// append/parquet (time ratio); files/append and MB/file. MB are the
// rows' bytes (key, value, header, fixed columns) but in MB/file, the
// Parquet files' size. 64k rows per append, 8 partitions, two days.
// Catalogs: SQLite with a local folder (floe dev), PostgreSQL with the
// test S3 server (production).
func BenchmarkAppend(b *testing.B) {
	b.Run("sqlite-dir", func(b *testing.B) { benchAppend(b, DefaultSQLiteConfig(b.TempDir())) })
	b.Run("postgres-s3", func(b *testing.B) {
		s3 := testenv.S3(b)
		cfg := DefaultPostgresConfig(testenv.Postgres(b), s3.Bucket)
		cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKey, cfg.S3SecretKey = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey
		benchAppend(b, cfg)
	})
}

func benchAppend(b *testing.B, cfg Config) {
	const n = 1 << 16
	ctx := context.Background()
	w, err := Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	tbl, err := w.EnsureTable(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		b.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		b.Fatal(err)
	}
	wfs, ok := fs.(icegoio.WriteFileIO)
	if !ok {
		b.Fatalf("%T cannot write", fs)
	}
	var (
		appending, writing time.Duration
		rowsDone, bytes    int64
		from               int64
		files, fileBytes   int64
	)
	b.ResetTimer()
	for b.Loop() {
		rows, wm, payload := benchRows(n, from)
		from += n / 8

		t0 := time.Now()
		if err := writeParquet(wfs, fmt.Sprintf("%s/raw/raw-%d.parquet", tbl.Location(), from), sc, rows); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		res, err := w.Append(ctx, "bench", rows, wm)
		if err != nil {
			b.Fatal(err)
		}
		if res.Rows != n {
			b.Fatalf("appended %d rows, want %d", res.Rows, n)
		}
		files += int64(res.Files)
		fileBytes += res.Bytes
		writing += t1.Sub(t0)
		appending += time.Since(t1)
		rowsDone += n
		bytes += payload
	}
	b.ReportMetric(float64(rowsDone)/appending.Seconds(), "append-rows/s")
	b.ReportMetric(float64(bytes)/1e6/appending.Seconds(), "append-MB/s")
	b.ReportMetric(float64(rowsDone)/writing.Seconds(), "parquet-rows/s")
	b.ReportMetric(float64(bytes)/1e6/writing.Seconds(), "parquet-MB/s")
	b.ReportMetric(float64(appending)/float64(writing), "append/parquet")
	b.ReportMetric(float64(files)/float64(b.N), "files/append")
	b.ReportMetric(float64(fileBytes)/1e6/float64(files), "MB/file")
}

// writeParquet writes rows, sorted as Append sorts them, to one Parquet
// file at location with arrow-go (zstd, no dictionaries), building the Arrow
// batches in a goroutine while the writer encodes the previous ones, as
// Append's writer does.
func writeParquet(fs icegoio.WriteFileIO, location string, sc *arrow.Schema, rows []Row) error {
	f, err := fs.Create(location)
	if err != nil {
		return err
	}
	todo := append([]Row(nil), rows...)
	sortForFiles(todo)
	pw, err := pqarrow.NewFileWriter(sc, f,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return err
	}
	batches := make(chan arrow.RecordBatch, 4)
	done := make(chan struct{})
	go func() {
		defer close(batches)
		for rec, err := range recordBatches(memory.DefaultAllocator, sc, todo, defaultBatchRows) {
			if err != nil {
				return // not with this schema
			}
			select {
			case batches <- rec:
			case <-done:
				rec.Release()
				return
			}
		}
	}()
	defer func() {
		close(done)
		for rec := range batches {
			rec.Release()
		}
	}()
	for rec := range batches {
		err = pw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			pw.Close()
			return err
		}
	}
	return pw.Close() // closes f too
}
