package compactor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// produceValues commits one batch of partition p holding values (nil: a
// null value) and records it in want.
func produceValues(t testing.TB, e env, topic int64, p int32, values []string, want produced) {
	t.Helper()
	rs := make([]kbatch.Record, len(values))
	for i, v := range values {
		rs[i] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte("k")}
		if v != "" {
			rs[i].Value = []byte(v)
		}
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
	if want[p] == nil {
		want[p] = map[int64]iceberg.Row{}
	}
	for j, rec := range rs {
		off := res[0].BaseOffset + int64(j)
		want[p][off] = iceberg.Row{Partition: p, Offset: off, Timestamp: time.UnixMilli(rec.Timestamp),
			AppendTime: time.UnixMilli(res[0].LogAppendTime), Key: rec.Key, Value: rec.Value}
	}
}

// tableColumn reads column col (a string or a struct's field path
// "value_fields.name") of tbl by offset of partition 0, as JSON.
func tableColumn(t *testing.T, tbl *table.Table, path ...string) map[int64]string {
	t.Helper()
	scan := tbl.Scan()
	defer scan.Close()
	_, batches, err := scan.ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for rec, err := range batches {
		if err != nil {
			t.Fatal(err)
		}
		off := rec.Column(rec.Schema().FieldIndices(iceberg.ColOffset)[0]).(*array.Int64)
		idx := rec.Schema().FieldIndices(path[0])
		if len(idx) != 1 {
			t.Fatalf("no column %s", path[0])
		}
		col := rec.Column(idx[0])
		for i := 0; i < int(rec.NumRows()); i++ {
			a, j := col, i
			var v any
			for _, name := range path[1:] {
				st := a.(*array.Struct)
				if st.IsNull(j) {
					a = nil
					break
				}
				k, _ := st.DataType().(*arrow.StructType).FieldIdx(name)
				a = st.Field(k)
			}
			if a != nil && !a.IsNull(j) {
				v = a.GetOneForMarshal(j)
			}
			b, _ := json.Marshal(v)
			out[off.Value(i)] = string(b)
		}
		rec.Release()
	}
	return out
}

// TestIcebergTypedColumns: values written before the topic had a value
// schema that do not conform land in the rejected table with their
// reason (once, even when the table's append fails after the rejected
// table's) while the table still takes every offset; the conforming ones
// fill the typed columns; an optional field added to the schema becomes
// a column that older rows read as null.
func TestIcebergTypedColumns(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		tp := createTopic(t, e.env, "typed", 1, map[string]string{"iceberg.lag": "0"})
		want := produced{}
		// Before the schema: anything goes.
		produceValues(t, e.env, tp.ID, 0, []string{`{"id":1,"name":"a"}`, `plain text`, `{"id":"two"}`, ""}, want)
		if _, err := e.meta.AlterTopicConfig(ctx, tp.Name, map[string]string{metadata.ConfigValueSchema: `{"type":"object","required":["id"],
			"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`}, nil); err != nil {
			t.Fatal(err)
		}
		produceValues(t, e.env, tp.ID, 0, []string{`{"id":4,"name":"d"}`}, want)

		w, fc := e.writer(t)
		c := iceCompactor(t, e, "a", w, nil)
		// The table's commit fails after the rejected table's landed: the
		// next pass replays the range, and the rejected rows stay once.
		main := w.Identifier(tp.Name)
		fc.BeforeCommit(func(_ context.Context, ident table.Identifier) error {
			if strings.Join(ident, ".") == strings.Join(main, ".") {
				return icetest.ErrInjected
			}
			return nil
		})
		if _, err := c.RunOnce(ctx); err == nil {
			t.Fatal("pass with the table's commits failing succeeded")
		}
		if wm, err := w.RejectedWatermark(ctx, tp.Name); err != nil || wm[0] != 5 {
			t.Fatalf("rejected watermark after the failed pass: %v, %v; want 0:5", wm, err)
		}
		fc.BeforeCommit(nil)
		runOnce(t, c)
		checkTable(t, w, tp.Name, want)

		tbl, err := w.Load(ctx, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		for _, name := range []string{"value_fields", "value_fields.id", "value_fields.name"} {
			f, ok := tbl.Schema().FindFieldByName(name)
			if !ok {
				t.Fatalf("no field %s in %v", name, tbl.Schema())
			}
			ids[name] = f.ID
		}
		if got, exp := tableColumn(t, tbl, "value_fields", "id"), map[int64]string{0: "1", 1: "null", 2: "null", 3: "null", 4: "4"}; !sameMap(got, exp) {
			t.Errorf("value_fields.id = %v, want %v", got, exp)
		}
		rtbl, err := w.Catalog().LoadTable(ctx, w.RejectedIdentifier(tp.Name))
		if err != nil {
			t.Fatal(err)
		}
		if got, exp := tableColumn(t, rtbl, "reason"), map[int64]string{
			1: `"$: not JSON: invalid character 'p' looking for beginning of value"`,
			2: `"$.id: want integer, got string"`,
		}; !sameMap(got, exp) {
			t.Errorf("rejected table reasons = %v, want %v", got, exp)
		}

		// Evolution: an optional field.
		if _, err := e.meta.AlterTopicConfig(ctx, tp.Name, map[string]string{metadata.ConfigValueSchema: `{"type":"object","required":["id"],
			"properties":{"id":{"type":"integer"},"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}}`}, nil); err != nil {
			t.Fatal(err)
		}
		produceValues(t, e.env, tp.ID, 0, []string{`{"id":5,"tags":["x","y"]}`}, want)
		runOnce(t, c)
		checkTable(t, w, tp.Name, want)
		if tbl, err = w.Load(ctx, tp.Name); err != nil {
			t.Fatal(err)
		}
		for name, id := range ids {
			if f, _ := tbl.Schema().FindFieldByName(name); f.ID != id {
				t.Errorf("field %s: id %d after evolution, was %d", name, f.ID, id)
			}
		}
		if got, exp := tableColumn(t, tbl, "value_fields", "tags"), map[int64]string{0: "null", 1: "null", 2: "null", 3: "null", 4: "null", 5: `["x","y"]`}; !sameMap(got, exp) {
			t.Errorf("value_fields.tags = %v, want %v", got, exp)
		}
		if rtbl, err = w.Catalog().LoadTable(ctx, w.RejectedIdentifier(tp.Name)); err != nil {
			t.Fatal(err)
		}
		if n := len(tableColumn(t, rtbl, "reason")); n != 2 {
			t.Errorf("rejected table has %d rows after more passes, want 2", n)
		}
	})
}

func sameMap(a, b map[int64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestIcebergRecreatedTopicRejected: a topic deleted and created again
// gets a rejected table of its own; the old one is renamed with the old
// table, so that its watermark does not hide the new topic's rejections.
func TestIcebergRecreatedTopicRejected(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		cfg := map[string]string{"iceberg.lag": "0", metadata.ConfigValueSchema: `{"type":"object","properties":{"id":{"type":"integer"}}}`}
		old := createTopic(t, e.env, "rr", 1, cfg)
		produceValues(t, e.env, old.ID, 0, []string{`old`}, produced{})
		w, _ := e.writer(t)
		c := iceCompactor(t, e, "a", w, nil)
		runOnce(t, c)
		if err := e.meta.DeleteTopic(ctx, "rr"); err != nil {
			t.Fatal(err)
		}
		tp := createTopic(t, e.env, "rr", 1, cfg)
		want := produced{}
		produceValues(t, e.env, tp.ID, 0, []string{`{"id":"new"}`, `{"id":1}`}, want)
		runOnce(t, c)
		checkTable(t, w, tp.Name, want)
		rtbl, err := w.Catalog().LoadTable(ctx, w.RejectedIdentifier(tp.Name))
		if err != nil {
			t.Fatal(err)
		}
		if got := tableColumn(t, rtbl, "reason"); !sameMap(got, map[int64]string{0: `"$.id: want integer, got string"`}) {
			t.Errorf("new rejected table: %v, want offset 0 with the new topic's reason", got)
		}
		renamed, err := w.Catalog().CheckTableExists(ctx, []string{"floe", fmt.Sprintf("rr_rejected_x%d", old.ID)})
		if err != nil || !renamed {
			t.Errorf("old rejected table renamed: %v, %v", renamed, err)
		}
	})
}
