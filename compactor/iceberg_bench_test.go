package compactor_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// BenchmarkIcebergPass measures the compactor's Iceberg job: one pass
// that reads 64k records (8 partitions, 64 batches of 1024 in 8 files,
// a 16-byte key, a 256-byte value half random, one header; as iceberg's
// BenchmarkAppend) through range GETs, decodes them and appends them to
// the topic's table, next to iceberg.Writer.Append of the same rows
// already decoded, in the same run: pass-rows/s, pass-MB/s, append-rows/s,
// append-MB/s and pass/append (time ratio; what reading and decoding the
// log adds). MB are the rows' bytes (key, value, header, fixed columns).
func BenchmarkIcebergPass(b *testing.B) {
	b.Run("sqlite-dir", func(b *testing.B) {
		meta := mustSQLite(b)
		dir, err := objectstore.NewDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchIcebergPass(b, iceEnv{env: env{meta: meta, store: dir}, cfg: icetest.SQLiteConfig(b)})
	})
	b.Run("postgres-s3", func(b *testing.B) {
		benchIcebergPass(b, iceEnv{env: pgEnv(b), cfg: icetest.PostgresConfig(b)})
	})
}

func benchIcebergPass(b *testing.B, e iceEnv) {
	const parts, batches, per = 8, 8, 1024
	ctx := context.Background()
	w, _ := icetest.Open(b, e.cfg, iceberg.Options{})
	c := iceCompactor(b, e, "bench", w, func(c *compactor.Config) { c.IcebergMaxBytes = 1 << 30 })
	var passTime, appendTime time.Duration
	var rowsTotal, payloadTotal int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: fmt.Sprintf("log%d", i), Partitions: parts,
			Config: map[string]string{"iceberg.lag": "0"}})
		if err != nil {
			b.Fatal(err)
		}
		rows, payload := produceBench(b, e.env, tp.ID, parts, batches, per, uint64(i))
		b.StartTimer()
		t0 := time.Now()
		r, err := c.RunOnce(ctx)
		if err != nil || r.IcebergRows != len(rows) {
			b.Fatalf("pass: %d rows, %v; want %d", r.IcebergRows, err, len(rows))
		}
		t1 := time.Now()
		want := iceberg.Watermark{}
		for _, row := range rows {
			want[row.Partition] = row.Offset + 1
		}
		if _, err := w.Append(ctx, fmt.Sprintf("direct%d", i), rows, want); err != nil {
			b.Fatal(err)
		}
		passTime += t1.Sub(t0)
		appendTime += time.Since(t1)
		rowsTotal += int64(len(rows))
		payloadTotal += payload
	}
	b.ReportMetric(float64(rowsTotal)/passTime.Seconds(), "pass-rows/s")
	b.ReportMetric(float64(payloadTotal)/1e6/passTime.Seconds(), "pass-MB/s")
	b.ReportMetric(float64(rowsTotal)/appendTime.Seconds(), "append-rows/s")
	b.ReportMetric(float64(payloadTotal)/1e6/appendTime.Seconds(), "append-MB/s")
	b.ReportMetric(passTime.Seconds()/appendTime.Seconds(), "pass/append")
}

// produceBench commits batches files, each with one batch of per records
// for each partition, and returns the rows the table must hold (in
// partition and offset order) and their bytes.
func produceBench(b *testing.B, e env, topic int64, parts, batches, per int, seed uint64) ([]iceberg.Row, int64) {
	rnd := mrand.New(mrand.NewPCG(seed, 9))
	byPart := make([][]iceberg.Row, parts)
	var payload int64
	for range batches {
		w := logfile.NewWriter(0)
		f := metadata.FileCommit{Key: newKey()}
		recs := make([][]kbatch.Record, parts)
		for p := range parts {
			rs := make([]kbatch.Record, per)
			for i := range rs {
				v := make([]byte, 256)
				for j := range 128 {
					v[j] = byte(rnd.IntN(256))
				}
				copy(v[128:], `{"kind":"order","status":"created","currency":"EUR","items":[{"sku":"A-1","qty":1}],"note":"x"}`)
				rs[i] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Key: fmt.Appendf(nil, "customer-%07d", rnd.IntN(1e6)),
					Value: v, Headers: []kbatch.Header{{Key: "source", Value: []byte("bench")}}}
				payload += int64(len(rs[i].Key) + len(v) + 6 + 5 + 4 + 8 + 8 + 8)
			}
			kb, err := kbatch.Encode(rs, kbatch.DefaultEncodeOptions())
			if err != nil {
				b.Fatal(err)
			}
			en, err := w.Append(topic, int32(p), kb)
			if err != nil {
				b.Fatal(err)
			}
			f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: topic, Partition: int32(p), ProducerID: -1,
				BaseSequence: metadata.NoSequence, ByteOffset: en.ByteOffset, ByteLength: en.ByteLength,
				RecordCount: en.RecordCount, MaxTimestamp: en.MaxTimestamp})
			recs[p] = rs
		}
		data := w.Finish()
		f.Size = int64(len(data))
		if err := e.store.Put(context.Background(), f.Key, data, objectstore.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		res, err := e.meta.CommitFile(context.Background(), f)
		if err != nil {
			b.Fatal(err)
		}
		for p, r := range res {
			for j, rec := range recs[p] {
				byPart[p] = append(byPart[p], iceberg.Row{Partition: int32(p), Offset: r.BaseOffset + int64(j),
					Timestamp: time.UnixMilli(rec.Timestamp), AppendTime: time.UnixMilli(r.LogAppendTime),
					Key: rec.Key, Value: rec.Value, Headers: rec.Headers})
			}
		}
	}
	var rows []iceberg.Row
	for _, rs := range byPart {
		rows = append(rows, rs...)
	}
	return rows, payload
}

// BenchmarkIcebergLag measures the compaction lag at a steady produce
// rate: 2,000 records/s (a file of 8 batches of 25 records, one per
// partition, every 100 ms) for 4 s, a compactor passing every 250 ms with
// iceberg.lag=0. Every 50 ms it reads the table's watermark; a batch's lag
// is from its commit to the first reading that covers it. Reports the
// mean and largest lag in ms (the pass interval is the floor: a batch
// waits for the next pass, then for the append) and the mean offsets the
// table trails the log.
func BenchmarkIcebergLag(b *testing.B) {
	b.Run("sqlite-dir", func(b *testing.B) {
		meta := mustSQLite(b)
		dir, err := objectstore.NewDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchIcebergLag(b, iceEnv{env: env{meta: meta, store: dir}, cfg: icetest.SQLiteConfig(b)})
	})
	b.Run("postgres-s3", func(b *testing.B) {
		benchIcebergLag(b, iceEnv{env: pgEnv(b), cfg: icetest.PostgresConfig(b)})
	})
}

func benchIcebergLag(b *testing.B, e iceEnv) {
	const parts, per, every, run = 8, 25, 100 * time.Millisecond, 4 * time.Second
	ctx := context.Background()
	w, _ := icetest.Open(b, e.cfg, iceberg.Options{})
	c := iceCompactor(b, e, "lag", w, func(c *compactor.Config) { c.Interval = 250 * time.Millisecond })
	var lagSum, lagMax time.Duration
	var batches, samples, trailSum int64
	for i := range b.N {
		name := fmt.Sprintf("lag%d", i)
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: name, Partitions: parts, Config: map[string]string{"iceberg.lag": "0"}})
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(rctx) }()
		type pending struct {
			hw  map[int32]int64
			at  time.Time
			got bool
		}
		var pend []*pending
		hw := map[int32]int64{}
		tick := time.NewTicker(50 * time.Millisecond)
		start, nextProduce := time.Now(), time.Now()
		for {
			now := time.Now()
			if now.Sub(start) < run && !now.Before(nextProduce) {
				rows, _ := produceBench(b, e.env, tp.ID, parts, 1, per, uint64(now.UnixNano()))
				for _, r := range rows {
					hw[r.Partition] = max(hw[r.Partition], r.Offset+1)
				}
				snap := map[int32]int64{}
				for p, o := range hw {
					snap[p] = o
				}
				pend = append(pend, &pending{hw: snap, at: time.Now()})
				nextProduce = nextProduce.Add(every)
			}
			<-tick.C
			wm, err := w.Watermark(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			seen, left := time.Now(), 0
			for _, p := range pend {
				if !p.got && iceberg.Watermark(wm).Covers(p.hw) {
					p.got = true
					d := seen.Sub(p.at)
					lagSum, lagMax, batches = lagSum+d, max(lagMax, d), batches+1
				}
				if !p.got {
					left++
				}
			}
			if now.Sub(start) < run {
				samples++
				for p, o := range hw {
					trailSum += o - wm[p]
				}
			} else if left == 0 {
				break
			}
			if now.Sub(start) > run+30*time.Second {
				b.Fatalf("the table did not catch up in 30 s: %d batches left", left)
			}
		}
		tick.Stop()
		cancel()
		<-done
	}
	b.ReportMetric(float64(lagSum.Milliseconds())/float64(max(batches, 1)), "mean-lag-ms")
	b.ReportMetric(float64(lagMax.Milliseconds()), "max-lag-ms")
	b.ReportMetric(float64(trailSum)/float64(max(samples, 1)), "trailing-offsets")
}
