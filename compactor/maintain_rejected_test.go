package compactor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// produceAt commits one batch of partition p holding values, each with
// timestamp ts, and returns the offsets it got.
func produceAt(t testing.TB, e env, topic int64, p int32, ts time.Time, values ...string) []int64 {
	t.Helper()
	rs := make([]kbatch.Record, len(values))
	for i, v := range values {
		rs[i] = kbatch.Record{Timestamp: ts.UnixMilli(), Key: []byte("k"), Value: []byte(v)}
	}
	kb, err := kbatch.Encode(rs, kbatch.DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	w := logfile.NewWriter(0)
	en, err := w.Append(topic, p, kb)
	if err != nil {
		t.Fatal(err)
	}
	data := w.Finish()
	f := metadata.FileCommit{Key: newKey(), Size: int64(len(data)), Batches: []metadata.BatchCommit{{TopicID: topic, Partition: p,
		ProducerID: -1, BaseSequence: metadata.NoSequence, ByteOffset: en.ByteOffset, ByteLength: en.ByteLength,
		RecordCount: en.RecordCount, MaxTimestamp: en.MaxTimestamp}}}
	if err := e.store.Put(context.Background(), f.Key, data, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := e.meta.CommitFile(context.Background(), f)
	if err != nil || res[0].Err != nil {
		t.Fatalf("commit: %v %v", err, res)
	}
	offs := make([]int64, len(values))
	for i := range offs {
		offs[i] = res[0].BaseOffset + int64(i)
	}
	return offs
}

// scanOffsets returns the offset column of every row of tbl.
func scanOffsets(t testing.TB, tbl *table.Table) []int64 {
	t.Helper()
	scan := tbl.Scan()
	defer scan.Close()
	_, batches, err := scan.ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rec, err := range batches {
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(rec.Schema().FieldIndices(iceberg.ColOffset)[0]).(*array.Int64)
		out = append(out, col.Int64Values()...)
		rec.Release()
	}
	return out
}

// tableMetric returns the value of the series of name whose table label
// is tbl, and whether there is one.
func tableMetric(t testing.TB, reg *prometheus.Registry, name, tbl string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" && l.GetValue() == tbl {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestIcebergMaintainRejected: a topic's rejected table, appended to on
// every pass (values that do not conform to the value schema, some with
// timestamps older than the table's retention) and left with the files
// of a failed commit, is maintained in the same visit as the topic's
// table: its expired days deleted, its small files rewritten, its
// snapshots expired, its orphans deleted; every rejected offset not
// expired is in it exactly once, and its rows are in the cursor and the
// floe_iceberg_rejected_rows metric, which goes when the topic does.
func TestIcebergMaintainRejected(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		tp := createTopic(t, e.env, "rej.kept", 1, map[string]string{"iceberg.lag": "0", "iceberg.retention.ms": "240h",
			metadata.ConfigValueSchema: `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`})
		w, fc := e.writer(t)
		rejected := w.RejectedIdentifier(tp.Name)
		rejName := strings.Join(rejected, ".")
		off := iceCompactor(t, e, "a", w, func(c *compactor.Config) { c.IcebergMaintain.Interval = 0 })
		old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		wantRejected := map[int64]bool{} // offset: kept by the retention
		for round := range 8 {
			ts := time.Now()
			if round == 2 {
				ts = old // a day the table's retention expires
			}
			offs := produceAt(t, e.env, tp.ID, 0, ts, fmt.Sprintf(`{"id":%d}`, round), fmt.Sprintf("bad %d", round))
			wantRejected[offs[1]] = round != 2
			if round == 4 { // a failed commit of the rejected table leaves orphan files in its location
				fc.BeforeCommit(func(_ context.Context, ident table.Identifier) error {
					if strings.Join(ident, ".") == rejName {
						return icetest.ErrInjected
					}
					return nil
				})
				if _, err := off.RunOnce(ctx); err == nil {
					t.Fatal("a pass whose rejected table's commits fail succeeded")
				}
				fc.BeforeCommit(nil)
			}
			runOnce(t, off)
		}
		before, err := w.DescribeRejected(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		rtbl, err := w.Catalog().LoadTable(ctx, rejected)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(rtbl.Metadata().Snapshots()); n < 8 || before.DataFiles < 8 || before.Rows != 8 {
			t.Fatalf("rejected table before maintenance: %d snapshots, %d data files, %d rows; want 8 at least, 8 rows",
				n, before.DataFiles, before.Rows)
		}
		if cur := cursorOf(t, e, tp); !cur.HasRejected || cur.RejectedRows != 8 {
			t.Errorf("cursor before maintenance %+v: want 8 rejected rows", cur)
		}

		reg := prometheus.NewRegistry()
		on := iceCompactor(t, e, "b", w, func(c *compactor.Config) {
			c.Registerer = reg
			c.IcebergMaintain = compactor.IcebergMaintainConfig{Interval: time.Hour, KeepSnapshots: 2,
				OrphanAge: time.Millisecond, RewriteMinFiles: 2}
		})
		time.Sleep(5 * time.Millisecond) // the orphans are older than OrphanAge
		runOnce(t, on)

		after, err := w.DescribeRejected(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if rtbl, err = w.Catalog().LoadTable(ctx, rejected); err != nil {
			t.Fatal(err)
		}
		rows := scanOffsets(t, rtbl)
		seen := map[int64]bool{}
		for _, off := range rows {
			if seen[off] || !wantRejected[off] {
				t.Errorf("rejected table: offset %d twice, expired or never rejected", off)
			}
			seen[off] = true
		}
		if len(rows) != 7 || after.Rows != 7 {
			t.Errorf("rejected table after maintenance: %d rows scanned, %d in its summary; want 7 (one day expired)", len(rows), after.Rows)
		}
		if after.DataFiles >= before.DataFiles || after.DataFiles > 2 {
			t.Errorf("rejected table after maintenance: %d data files (before %d), want 2 at most", after.DataFiles, before.DataFiles)
		}
		if n := len(rtbl.Metadata().Snapshots()); n > 2 {
			t.Errorf("rejected table after maintenance: %d snapshots, want 2 at most", n)
		}
		for name, min := range map[string]float64{
			"floe_iceberg_maintenance_expired_files_total":     1,
			"floe_iceberg_maintenance_rewritten_files_total":   2,
			"floe_iceberg_maintenance_expired_snapshots_total": 1,
			"floe_iceberg_maintenance_orphan_files_total":      1,
		} {
			if v, _ := tableMetric(t, reg, name, rejName); v < min {
				t.Errorf("%s{table=%q} = %v, want %v at least", name, rejName, v, min)
			}
		}
		cur := cursorOf(t, e, tp)
		if cur.MaintainedMs == 0 || !cur.HasRejected || cur.RejectedRows != 7 || cur.RejectedDataFiles != after.DataFiles ||
			cur.RejectedDataBytes != after.Bytes {
			t.Errorf("cursor %+v does not record the rejected table %+v", cur, after)
		}
		if v, ok := tableMetric(t, reg, "floe_iceberg_rejected_rows", rejName); !ok || v != 7 {
			t.Errorf("floe_iceberg_rejected_rows{table=%q} = %v (%v), want 7", rejName, v, ok)
		}
		// The topic's table is maintained too, and its rows are intact.
		main, err := w.Describe(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if main.Rows != 14 || main.DataFiles > 2 {
			t.Errorf("table after maintenance: %d rows in %d files, want 14 in 2 at most", main.Rows, main.DataFiles)
		}

		if err := e.meta.DeleteTopic(ctx, tp.Name); err != nil {
			t.Fatal(err)
		}
		runOnce(t, on)
		if _, ok := tableMetric(t, reg, "floe_iceberg_rejected_rows", rejName); ok {
			t.Error("the deleted topic's rejected rows series stays")
		}
		if _, ok := tableMetric(t, reg, "floe_iceberg_maintenance_orphan_files_total", rejName); ok {
			t.Error("the deleted topic's rejected table's maintenance series stay")
		}
		runOnce(t, iceCompactor(t, e, "drop", w, func(c *compactor.Config) { c.IcebergMaintain.DropDeletedTopics = true }))
		if ok, err := w.Catalog().CheckTableExists(ctx, rejected); err != nil || ok {
			t.Errorf("the deleted topic's rejected table: exists %v, %v; want it dropped", ok, err)
		}
	})
}
