package iceberg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/schema"
)

const typedV1 = `{"type":"object","required":["id"],"properties":{
  "id":{"type":"integer"},
  "name":{"type":["string","null"]},
  "score":{"type":"number"},
  "ok":{"type":"boolean"},
  "at":{"type":"string","format":"date-time"},
  "user":{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}},
  "nums":{"type":"array","items":{"type":["integer","null"]}}}}`

// typedV2 adds optional fields: note, and user.age inside the struct.
const typedV2 = `{"type":"object","required":["id"],"properties":{
  "id":{"type":"integer"},
  "name":{"type":["string","null"]},
  "score":{"type":"number"},
  "ok":{"type":"boolean"},
  "at":{"type":"string","format":"date-time"},
  "user":{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"age":{"type":"integer"}}},
  "nums":{"type":"array","items":{"type":["integer","null"]}},
  "note":{"type":"string"}}}`

func parseSchema(t *testing.T, text string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// arrowValue converts element i of a to plain Go values for comparison:
// timestamps as RFC 3339 (UTC, microseconds) strings.
func arrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Struct:
		m := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		for j, f := range st.Fields() {
			m[f.Name] = arrowValue(a.Field(j), i)
		}
		return m
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, arrowValue(a.ListValues(), j))
		}
		return out
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("unexpected %T", a)
}

// scanColumn returns column col of tbl as JSON per (partition, offset).
func scanColumn(t *testing.T, tbl *table.Table, col string) map[[2]int64]string {
	t.Helper()
	scan := tbl.Scan()
	defer scan.Close()
	_, batches, err := scan.ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]int64]string{}
	for rec, err := range batches {
		if err != nil {
			t.Fatal(err)
		}
		idx := func(name string) arrow.Array {
			i := rec.Schema().FieldIndices(name)
			if len(i) != 1 {
				t.Fatalf("no column %s in %v", name, rec.Schema())
			}
			return rec.Column(i[0])
		}
		part, off, c := idx(iceberg.ColPartition).(*array.Int32), idx(iceberg.ColOffset).(*array.Int64), idx(col)
		for i := 0; i < int(rec.NumRows()); i++ {
			k := [2]int64{int64(part.Value(i)), off.Value(i)}
			if _, dup := out[k]; dup {
				t.Errorf("%v twice", k)
			}
			b, err := json.Marshal(arrowValue(c, i))
			if err != nil {
				t.Fatal(err)
			}
			out[k] = string(b)
		}
		rec.Release()
	}
	return out
}

// fieldIDs returns every field id of sc by its full name.
func fieldIDs(sc *icego.Schema) map[string]int {
	out := map[string]int{}
	for _, f := range sc.Fields() {
		var walk func(path string, f icego.NestedField)
		walk = func(path string, f icego.NestedField) {
			out[path] = f.ID
			switch t := f.Type.(type) {
			case *icego.StructType:
				for _, c := range t.FieldList {
					walk(path+"."+c.Name, c)
				}
			case *icego.ListType:
				walk(path+".element", t.ElementField())
			}
		}
		walk(f.Name, f)
	}
	return out
}

// fixedIDs are the fixed columns' field ids (docs/iceberg.md: 1 to 10
// whatever the schema), written out: the tests do not take them from
// iceberg.Schema, the function under test.
var fixedIDs = map[string]int{"partition": 1, "offset": 2, "timestamp": 3, "append_time": 4, "key": 5, "value": 6,
	"headers": 7, "headers.element": 8, "headers.element.key": 9, "headers.element.value": 10}

// typedV1IDs are typedV1's field ids in a table created with it:
// value_fields 11, its fields from 12, depth first in declaration order.
var typedV1IDs = map[string]int{"value_fields": 11, "value_fields.id": 12, "value_fields.name": 13, "value_fields.score": 14,
	"value_fields.ok": 15, "value_fields.at": 16, "value_fields.user": 17, "value_fields.user.name": 18,
	"value_fields.user.tags": 19, "value_fields.user.tags.element": 20, "value_fields.nums": 21, "value_fields.nums.element": 22}

// wantIDs checks that ids holds exactly the fields of want with their ids.
func wantIDs(t *testing.T, what string, ids map[string]int, want ...map[string]int) {
	t.Helper()
	n := 0
	for _, w := range want {
		for name, id := range w {
			if ids[name] != id {
				t.Errorf("%s: field %s has id %d, want %d", what, name, ids[name], id)
			}
		}
		n += len(w)
	}
	if len(ids) != n {
		t.Errorf("%s: %d fields, want %d: %v", what, len(ids), n, ids)
	}
}

type typedCase struct {
	value  string // "" for a null value
	fields string // value_fields as JSON; "null" when none
	reason string // the rejected table's reason, "" when not rejected
}

func typedRows(cases []typedCase, partition int32, from int64) ([]iceberg.Row, iceberg.Watermark) {
	now := time.Now().UTC()
	rows := make([]iceberg.Row, len(cases))
	for i, c := range cases {
		rows[i] = iceberg.Row{Partition: partition, Offset: from + int64(i), Timestamp: now, AppendTime: now}
		if c.value != "" {
			rows[i].Value = []byte(c.value)
		}
	}
	return rows, iceberg.Watermark{partition: from + int64(len(cases))}
}

// appendTyped is what the compactor does with a range: reject, then append.
func appendTyped(t *testing.T, w *iceberg.Writer, topic string, vs *schema.Schema, rows []iceberg.Row, want iceberg.Watermark) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := w.EnsureTable(ctx, topic, iceberg.WithValueSchema(vs)); err != nil {
		t.Fatal(err)
	}
	if rejected := iceberg.TypeRows(vs, rows); len(rejected) > 0 {
		if _, err := w.AppendRejected(ctx, topic, rejected, want); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Append(ctx, topic, rows, want); err != nil {
		t.Fatal(err)
	}
}

// TestTypedColumns: a table with a value schema carries its fields as
// typed columns (every type: long, string, double, boolean, timestamptz,
// struct, list, nulls); values that do not conform go to the rejected
// table with their reason and keep their raw value in the table; adding
// optional fields evolves the table, field ids stay, and rows written
// before read the new fields as null.
func TestTypedColumns(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		const topic = "typed.events"
		v1, v2 := parseSchema(t, typedV1), parseSchema(t, typedV2)
		first := []typedCase{
			{`{"id":1,"name":"ann","score":1.5,"ok":true,"at":"2024-03-01T10:00:00.123456+02:00","user":{"name":"u","tags":["a","b"]},"nums":[1,null,3]}`,
				`{"at":"2024-03-01T08:00:00.123456Z","id":1,"name":"ann","nums":[1,null,3],"ok":true,"score":1.5,"user":{"name":"u","tags":["a","b"]}}`, ""},
			{`{"id":2.0,"name":null,"extra":{"x":1}}`,
				`{"at":null,"id":2,"name":null,"nums":null,"ok":null,"score":null,"user":null}`, ""},
			{"", "null", ""}, // a tombstone: no typed columns, not rejected
			{`{"id":"3"}`, "null", "$.id: want integer, got string"},
			{`not json`, "null", "$: not JSON"},
			{`{"id":4,"user":{"tags":[]},"nums":[]}`,
				`{"at":null,"id":4,"name":null,"nums":[],"ok":null,"score":null,"user":{"name":null,"tags":[]}}`, ""},
		}
		rows, want := typedRows(first, 0, 0)
		appendTyped(t, w, topic, v1, rows, want)
		tbl, err := w.Load(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		ids1 := fieldIDs(tbl.Schema())
		wantIDs(t, "the table created with typedV1", ids1, fixedIDs, typedV1IDs)

		// Evolution: two optional fields, one nested.
		more := []typedCase{
			{`{"id":5,"note":"hi","user":{"name":"v","age":30}}`,
				`{"at":null,"id":5,"name":null,"note":"hi","nums":null,"ok":null,"score":null,"user":{"age":30,"name":"v","tags":null}}`, ""},
			{`{"id":6,"note":7}`, "null", "$.note: want string, got number"},
		}
		rows2, want2 := typedRows(more, 0, want[0])
		appendTyped(t, w, topic, v2, rows2, want2)
		if tbl, err = w.Load(ctx, topic); err != nil {
			t.Fatal(err)
		}
		ids2 := fieldIDs(tbl.Schema())
		for name, id := range ids1 {
			if ids2[name] != id {
				t.Errorf("field %s: id %d after evolution, was %d", name, ids2[name], id)
			}
		}
		// The two new fields take the table's next ids, 23 and 24.
		if n, a := ids2["value_fields.note"], ids2["value_fields.user.age"]; n == a || min(n, a) != 23 || max(n, a) != 24 {
			t.Errorf("new fields note and user.age: ids %d and %d, want 23 and 24", n, a)
		}
		if len(ids2) != len(ids1)+2 {
			t.Errorf("%d fields after evolution, want %d: %v", len(ids2), len(ids1)+2, ids2)
		}
		// A repeated evolution changes nothing.
		if again, err := w.EnsureTable(ctx, topic, iceberg.WithValueSchema(v2)); err != nil || again.Schema().ID != tbl.Schema().ID {
			t.Errorf("repeated EnsureTable: %v, schema %d -> %d", err, tbl.Schema().ID, again.Schema().ID)
		}

		got := scanColumn(t, tbl, iceberg.ColValueFields)
		all := append(slices.Clone(first), more...)
		for i, c := range all {
			exp := c.fields
			if i < len(first) && exp != "null" {
				// Rows written before the evolution read the new fields as null.
				exp = strings.Replace(exp, `"nums"`, `"note":null,"nums"`, 1)
				exp = strings.Replace(exp, `"user":{"name"`, `"user":{"age":null,"name"`, 1)
			}
			if g := got[[2]int64{0, int64(i)}]; g != exp {
				t.Errorf("offset %d value_fields:\n got %s\nwant %s", i, g, exp)
			}
		}
		// The raw values are all in the table.
		checkTable(t, w, topic, append(rows, rows2...))

		// The rejected table: the two rows, with their reasons, once.
		rtbl, err := w.Catalog().LoadTable(ctx, w.RejectedIdentifier(topic))
		if err != nil {
			t.Fatal(err)
		}
		reasons := scanColumn(t, rtbl, iceberg.ColReason)
		values := scanColumn(t, rtbl, iceberg.ColValue)
		wantRejected := 0
		for i, c := range all {
			k := [2]int64{0, int64(i)}
			if c.reason == "" {
				if _, ok := reasons[k]; ok {
					t.Errorf("offset %d rejected, want not", i)
				}
				continue
			}
			wantRejected++
			var reason string
			_ = json.Unmarshal([]byte(reasons[k]), &reason)
			if !strings.HasPrefix(reason, c.reason) {
				t.Errorf("offset %d: reason %q, want %q", i, reason, c.reason)
			}
			if values[k] == "" {
				t.Errorf("offset %d: no raw value in the rejected table", i)
			}
		}
		if len(reasons) != wantRejected {
			t.Errorf("rejected table has %d rows, want %d", len(reasons), wantRejected)
		}
		// A replay of both ranges writes nothing more to either table.
		rej := iceberg.TypeRows(v2, rows2)
		if res, err := w.AppendRejected(ctx, topic, rej, want2); err != nil || res.Rows != 0 {
			t.Errorf("replayed AppendRejected: %d rows, %v", res.Rows, err)
		}
		if wm, err := w.RejectedWatermark(ctx, topic); err != nil || !wm.Equal(want2) {
			t.Errorf("rejected watermark %v, %v; want %v", wm, err, want2)
		}

		// A table column whose type conflicts with the schema is reported,
		// not changed.
		conflicting := parseSchema(t, strings.Replace(typedV2, `"note":{"type":"string"}`, `"note":{"type":"boolean"}`, 1))
		if _, err := w.EnsureTable(ctx, topic, iceberg.WithValueSchema(conflicting)); !errors.Is(err, iceberg.ErrSchemaConflict) ||
			!strings.Contains(err.Error(), "value_fields.note is string") {
			t.Errorf("conflicting schema: %v, want ErrSchemaConflict naming value_fields.note", err)
		}
	})
}

// A table created before its topic had a schema gets the typed columns
// added: its first rows read them as null.
func TestTypedColumnsAddedLater(t *testing.T) {
	ctx := testCtx(t)
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	rows, want := typedRows([]typedCase{{value: `{"id":1}`}}, 0, 0)
	if _, err := w.Append(ctx, "late", rows, want); err != nil {
		t.Fatal(err)
	}
	rows2, want2 := typedRows([]typedCase{{value: `{"id":2,"user":{"name":"x"}}`}}, 0, 1)
	appendTyped(t, w, "late", parseSchema(t, typedV1), rows2, want2)
	tbl, err := w.Load(ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	got := scanColumn(t, tbl, iceberg.ColValueFields)
	if got[[2]int64{0, 0}] != "null" || !strings.Contains(got[[2]int64{0, 1}], `"id":2`) {
		t.Errorf("value_fields: %v", got)
	}
	if id := fieldIDs(tbl.Schema())["value_fields"]; id != 11 {
		t.Errorf("value_fields added with id %d, want 11 (the table's next)", id)
	}
}

func TestRejectedTableName(t *testing.T) {
	for topic, want := range map[string]string{
		"orders":          "orders_rejected",
		"orders_rejected": "orders__rejected_rejected",
		"Orders.x":        "_uorders_dx_rejected",
	} {
		if got := iceberg.RejectedTableName(topic); got != want {
			t.Errorf("RejectedTableName(%q) = %q, want %q", topic, got, want)
		}
	}
	long := strings.Repeat("a", 250)
	got := iceberg.RejectedTableName(long)
	if len(got) > iceberg.MaxTableNameLen || !strings.HasSuffix(got, "_rejected") || !strings.Contains(got, "_z") ||
		got == iceberg.RejectedTableName(long+"b") {
		t.Errorf("RejectedTableName(250 a) = %q (%d)", got, len(got))
	}
	if iceberg.RejectedTableName("orders") == iceberg.TableName("orders_rejected") {
		t.Error("a rejected table's name is another topic's table name")
	}
}

// Schema(vs): the fixed columns keep ids 1 to 10, value_fields is 11 and
// its fields follow depth first, all optional, typed by the mapping.
func TestSchemaWithValueSchema(t *testing.T) {
	sc := iceberg.Schema(parseSchema(t, `{"type":"object","required":["id"],"properties":{
		"id":{"type":"integer"},
		"user":{"type":"object","properties":{"name":{"type":"string"},"at":{"type":"string","format":"date-time"}}},
		"tags":{"type":"array","items":{"type":"number"}},
		"ok":{"type":"boolean"}}}`))
	wantIDs(t, "Schema(nil)", fieldIDs(iceberg.Schema(nil)), fixedIDs)
	ids := fieldIDs(sc)
	for name, id := range fixedIDs {
		if ids[name] != id {
			t.Errorf("%s: id %d, want %d", name, ids[name], id)
		}
	}
	want := map[string]int{"value_fields": 11, "value_fields.id": 12, "value_fields.user": 13, "value_fields.user.name": 14,
		"value_fields.user.at": 15, "value_fields.tags": 16, "value_fields.tags.element": 17, "value_fields.ok": 18}
	types := map[string]string{"value_fields.id": "long", "value_fields.user.name": "string", "value_fields.user.at": "timestamptz",
		"value_fields.tags.element": "double", "value_fields.ok": "boolean"}
	for name, id := range want {
		f, ok := sc.FindFieldByName(name)
		if !ok || f.ID != id || f.Required {
			t.Errorf("%s: %+v (found %v), want id %d, optional", name, f, ok, id)
			continue
		}
		if tp, ok := types[name]; ok && f.Type.String() != tp {
			t.Errorf("%s: type %s, want %s", name, f.Type, tp)
		}
	}
	if len(ids) != 10+len(want) {
		t.Errorf("%d fields, want %d: %v", len(ids), 10+len(want), ids)
	}
}
