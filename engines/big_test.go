//go:build engines

package engines

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/kbatch"
)

// TestMillionRows (FLOE_ENGINES_BIG=1; a measurement, not part of make
// test-engines): a table of one million rows over four days, and the
// time Trino and Spark take for count(*) and a one-day filter (each run
// twice, the second reported). It asserts the counts, not the times.
func TestMillionRows(t *testing.T) {
	if os.Getenv("FLOE_ENGINES_BIG") != "1" {
		t.Skip("a measurement: FLOE_ENGINES_BIG=1 runs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := startCluster(t, ctx)
	c.startCompactor(t, ctx)
	var tr *trino
	var trErr error
	trReady := make(chan struct{})
	go func() { defer close(trReady); tr, trErr = startTrino(ctx, c) }()
	t.Cleanup(func() {
		<-trReady
		if tr != nil {
			tr.stop()
		}
	})
	const topic, parts, total, perBatch = "big", 4, 1_000_000, 5000
	if _, err := c.client.CreateTopic(ctx, topic, parts, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	ds := newDataset()
	start := time.Now()
	perDay := map[string]int{}
	for n := 0; n < total; n += perBatch {
		recs := make([]kbatch.Record, perBatch)
		day := ds.days[(n/perBatch)%len(ds.days)]
		for i := range recs {
			recs[i] = kbatch.Record{Timestamp: day.Add(time.Duration(n+i) * time.Millisecond).UnixMilli(),
				Key: []byte(fmt.Sprintf("k%d", (n+i)%1000)), Value: []byte(fmt.Sprintf(`{"n":%d,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, n+i))}
		}
		perDay[day.Format("2006-01-02")] += perBatch
		b, err := kbatch.Encode(recs, kbatch.EncodeOptions{Compression: kbatch.Zstd, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.client.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: topic,
			Partitions: []*floev1.PartitionBatches{{Partition: int32(n/perBatch) % parts, Batches: b}}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("produced %d rows in %v", total, time.Since(start).Round(time.Millisecond))
	c.waitTables(t, ctx, topic)
	t.Logf("table caught up %v after the first produce", time.Since(start).Round(time.Millisecond))
	table := iceberg.TableName(topic)
	day := ds.days[1]
	wantDay := perDay[day.Format("2006-01-02")]

	<-trReady
	if trErr != nil {
		t.Fatal(trErr)
	}
	where := fmt.Sprintf(`"timestamp" >= TIMESTAMP '%s UTC' AND "timestamp" < TIMESTAMP '%s UTC'`,
		day.Format("2006-01-02 15:04:05"), day.AddDate(0, 0, 1).Format("2006-01-02 15:04:05"))
	for _, qc := range []struct {
		sql  string
		want int
	}{
		{fmt.Sprintf(`SELECT count(*) AS n FROM floe.floe."%s"`, table), total},
		{fmt.Sprintf(`SELECT count(*) AS n FROM floe.floe."%s" WHERE %s`, table, where), wantDay},
	} {
		var took time.Duration
		for range 2 {
			t0 := time.Now()
			rows, err := tr.query(ctx, qc.sql)
			if err != nil {
				t.Fatal(err)
			}
			took = time.Since(t0)
			if got := rows[0]["n"].(int64); got != int64(qc.want) {
				t.Errorf("trino %s: %d, want %d", qc.sql, got, qc.want)
			}
		}
		t.Logf("trino: %v  %s", took.Round(time.Millisecond), qc.sql)
	}
	tr.stop()
	tr = nil

	jars, env := (&fixture{}).sparkEnv(t)
	conf := filepath.Join(t.TempDir(), "spark-defaults.conf")
	if err := os.WriteFile(conf, []byte(c.shipped(t, "spark/spark-defaults.conf")), 0o644); err != nil {
		t.Fatal(err)
	}
	swhere := fmt.Sprintf("`timestamp` >= timestamp_micros(%d) AND `timestamp` < timestamp_micros(%d)", day.UnixMicro(), day.AddDate(0, 0, 1).UnixMicro())
	job := map[string]any{"conf_files": []string{conf}, "jars": jars, "catalog": "floe", "namespace": namespace, "tables": []string{},
		"timed": []string{
			fmt.Sprintf("SELECT count(*) FROM floe.floe.`%s`", table),
			fmt.Sprintf("SELECT count(*) FROM floe.floe.`%s` WHERE %s", table, swhere),
		}}
	a := runPy(t, ctx, "spark_read.py", job, env...)
	for i, tm := range a.Timings {
		want := []int{total, wantDay}[i]
		if tm.Result != fmt.Sprint(want) {
			t.Errorf("spark %s: %s, want %d", tm.SQL, tm.Result, want)
		}
		t.Logf("spark: %.3fs  %s", tm.Seconds, tm.SQL)
	}
}
