package iceberg

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/floe-broker/floe/schema"
)

const benchSchema = `{"type":"object","required":["id","kind"],"properties":{
  "id":{"type":"integer"},"kind":{"type":"string"},"amount":{"type":"number"},"paid":{"type":"boolean"},
  "at":{"type":"string","format":"date-time"},
  "customer":{"type":"object","properties":{"name":{"type":"string"},"country":{"type":"string"}}},
  "items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}}}`

// typedBenchRows returns n rows over 8 partitions from offset from on
// with JSON values of about 230 bytes that conform to benchSchema.
func typedBenchRows(n int, from int64) ([]Row, Watermark) {
	rnd := rand.New(rand.NewPCG(uint64(from), 2))
	rows := make([]Row, n)
	wm := Watermark{}
	base := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)
	per := n / 8
	for i := range rows {
		p := int32(i / per)
		off := from + int64(i%per)
		ts := base.Add(time.Duration(off) * time.Second)
		v := fmt.Appendf(nil, `{"id":%d,"kind":"order","amount":%.2f,"paid":%v,"at":%q,"customer":{"name":"customer-%07d","country":"FR"},"items":[{"sku":"A-%d","qty":%d},{"sku":"B-%d","qty":1}]}`,
			off, rnd.Float64()*1000, rnd.IntN(2) == 0, ts.Format(time.RFC3339Nano), rnd.IntN(1e6), rnd.IntN(100), 1+rnd.IntN(5), rnd.IntN(100))
		rows[i] = Row{Partition: p, Offset: off, Timestamp: ts, AppendTime: ts.Add(time.Millisecond),
			Key: fmt.Appendf(nil, "customer-%07d", rnd.IntN(1e6)), Value: v}
		wm[p] = off + 1
	}
	return rows, wm
}

// BenchmarkTypedAppend measures an append of 64k JSON rows to a table
// with typed columns (TypeRows: each value validated, then decoded again
// into value_fields) against the same rows to a table without, in the
// same run, on SQLite with a local folder: typed/plain is the time ratio.
func BenchmarkTypedAppend(b *testing.B) {
	const n = 1 << 16
	ctx := context.Background()
	w, err := Open(ctx, DefaultSQLiteConfig(b.TempDir()), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	vs, err := schema.Parse(benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.EnsureTable(ctx, "typed", WithValueSchema(vs)); err != nil {
		b.Fatal(err)
	}
	var plain, typed time.Duration
	var bytes int64
	b.ResetTimer()
	for i := range b.N {
		rows, wm := typedBenchRows(n, int64(i)*n)
		for _, r := range rows {
			bytes += int64(len(r.Value))
		}
		start := time.Now()
		if _, err := w.Append(ctx, "plain", rows, wm); err != nil {
			b.Fatal(err)
		}
		plain += time.Since(start)
		start = time.Now()
		if rej := TypeRows(vs, rows); len(rej) != 0 {
			b.Fatalf("%d rows rejected: %s", len(rej), rej[0].Reason)
		}
		if _, err := w.Append(ctx, "typed", rows, wm); err != nil {
			b.Fatal(err)
		}
		typed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*n)/plain.Seconds(), "plain-rows/s")
	b.ReportMetric(float64(b.N*n)/typed.Seconds(), "typed-rows/s")
	b.ReportMetric(float64(bytes)/1e6/typed.Seconds(), "typed-value-MB/s")
	b.ReportMetric(typed.Seconds()/plain.Seconds(), "typed/plain")
}

// BenchmarkValidate is the produce path's check of one value.
func BenchmarkValidate(b *testing.B) {
	vs, err := schema.Parse(benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	rows, _ := typedBenchRows(8, 0)
	v := rows[0].Value
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if err := vs.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}
