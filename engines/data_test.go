//go:build engines

package engines

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/kbatch"
)

// row is one table row in the suite's canonical form (see
// engines/py/common.py): bytes {"$b": hex}, timestamps {"$t": µs}.
type row = map[string]any

func bin(b []byte) any {
	if b == nil {
		return nil
	}
	return map[string]any{"$b": hex.EncodeToString(b)}
}

func ts(us int64) any { return map[string]any{"$t": us} }

// dataset is what the suite produced, per table: the rows each table
// must hold.
type dataset struct {
	days   []time.Time       // the UTC days the timestamps fall on
	tables map[string][]row  // table name → rows
	topics map[string]string // table name → topic
}

func newDataset() *dataset {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	d := &dataset{tables: map[string][]row{}, topics: map[string]string{}}
	for i := 3; i >= 0; i-- {
		d.days = append(d.days, today.AddDate(0, 0, -i))
	}
	return d
}

// produce sends recs to one partition of topic as one Kafka batch
// (ProduceBatches: null header values and null keys need the batch
// path) and records the rows its table must get; typed, when set, gives
// a row's value_fields from its value.
func (d *dataset) produce(t *testing.T, ctx context.Context, c *cluster, topic, table string, part int32, recs []kbatch.Record, typed func(v []byte) any) {
	t.Helper()
	b, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.client.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: topic,
		Partitions: []*floev1.PartitionBatches{{Partition: part, Batches: b}}})
	if err != nil {
		t.Fatalf("produce %s/%d: %v", topic, part, err)
	}
	base, at := resp.GetResults()[0].GetBaseOffset(), resp.GetLogAppendTimeMs()
	d.topics[table] = topic
	for i, r := range recs {
		hs := []any{}
		for _, h := range r.Headers {
			hs = append(hs, row{"key": h.Key, "value": bin(h.Value)})
		}
		out := row{"partition": part, "offset": base + int64(i), "timestamp": ts(r.Timestamp * 1000),
			"append_time": ts(at * 1000), "key": bin(r.Key), "value": bin(r.Value), "headers": hs}
		if typed != nil {
			out["value_fields"] = typed(r.Value)
		}
		d.tables[table] = append(d.tables[table], out)
	}
}

// reject records that a row's value goes to the topic's rejected table.
func (d *dataset) reject(table string, r row) {
	rej := row{"reason": "*"}
	for _, k := range []string{"partition", "offset", "timestamp", "append_time", "key", "value"} {
		rej[k] = r[k]
	}
	d.tables[table] = append(d.tables[table], rej)
}

// stamp is a timestamp on day i%len(days), i seconds into it.
func (d *dataset) stamp(i int) int64 {
	return d.days[i%len(d.days)].Add(time.Duration(i) * time.Second).UnixMilli()
}

// rawRecords are records covering every fixed column: keys null, empty,
// binary and text; values null (tombstones), empty, binary and text;
// headers none, several, with null and empty values; timestamps over
// every day of the dataset.
func (d *dataset) rawRecords(rng *rand.Rand, n, from int) []kbatch.Record {
	var out []kbatch.Record
	for i := range n {
		j := from + i
		r := kbatch.Record{Timestamp: d.stamp(j)}
		switch j % 4 {
		case 0: // null key
		case 1:
			r.Key = []byte{}
		case 2:
			r.Key = []byte{0, 0xff, byte(j), 0x80, '\n'}
		case 3:
			r.Key = []byte(fmt.Sprintf("key-%d", j%7))
		}
		switch j % 5 {
		case 0: // tombstone
		case 1:
			r.Value = []byte{}
		case 2:
			r.Value = make([]byte, 1+rng.IntN(300))
			for k := range r.Value {
				r.Value[k] = byte(rng.UintN(256))
			}
		default:
			r.Value = []byte(fmt.Sprintf(`{"n":%d,"text":"value \u00e9 %d"}`, j, j))
		}
		switch j % 3 {
		case 1:
			r.Headers = []kbatch.Header{{Key: "h-null", Value: nil}, {Key: "h-empty", Value: []byte{}},
				{Key: "trace", Value: []byte{1, 2, 3, byte(j)}}}
		case 2:
			r.Headers = []kbatch.Header{{Key: "ü-key", Value: []byte("text")}}
		}
		out = append(out, r)
	}
	return out
}

// The typed topic's JSON Schema, before and after the evolution (v2 adds
// an optional root field and an optional nested one).
const schemaV1 = `{"type":"object","required":["id"],"properties":{
 "id":{"type":"integer"},
 "name":{"type":["string","null"]},
 "price":{"type":"number"},
 "paid":{"type":"boolean"},
 "at":{"type":"string","format":"date-time"},
 "customer":{"type":"object","properties":{
   "name":{"type":"string"},
   "address":{"type":["object","null"],"properties":{"city":{"type":"string"},"zip":{"type":["string","null"]}}}}},
 "tags":{"type":"array","items":{"type":["string","null"]}},
 "lines":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}
}}`

const schemaV2 = `{"type":"object","required":["id"],"properties":{
 "id":{"type":"integer"},
 "name":{"type":["string","null"]},
 "price":{"type":"number"},
 "paid":{"type":"boolean"},
 "at":{"type":"string","format":"date-time"},
 "customer":{"type":"object","properties":{
   "name":{"type":"string"},
   "address":{"type":["object","null"],"properties":{"city":{"type":"string"},"zip":{"type":["string","null"]}}},
   "email":{"type":["string","null"]}}},
 "tags":{"type":"array","items":{"type":["string","null"]}},
 "lines":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}},
 "note":{"type":["string","null"]}
}}`

// typedValue is the i-th value of the typed topic; v2 values carry the
// fields v2 added.
func typedValue(i int, v2 bool) []byte {
	v := map[string]any{"id": i, "price": float64(i) + 0.25, "paid": i%2 == 0,
		"at":       time.Date(2026, 3, 1, 10, 0, i, 500_000_000, time.FixedZone("", 2*3600)).Format(time.RFC3339Nano),
		"customer": map[string]any{"name": fmt.Sprintf("c%d", i)},
		"tags":     []any{"a", nil, fmt.Sprint(i)},
		"lines":    []any{map[string]any{"sku": "s1", "qty": i}, map[string]any{"sku": "s2"}},
		"extra":    "not in the schema",
	}
	if i%3 == 0 {
		v["name"] = nil
	} else {
		v["name"] = fmt.Sprintf("n%d", i)
	}
	if i%2 == 0 {
		v["customer"].(map[string]any)["address"] = map[string]any{"city": "Lyon", "zip": nil}
	}
	if i%4 == 0 {
		delete(v, "tags")
	}
	if v2 {
		v["note"] = fmt.Sprintf("note %d", i)
		v["customer"].(map[string]any)["email"] = fmt.Sprintf("c%d@example.com", i)
	}
	b, _ := json.Marshal(v)
	return b
}

// project turns a JSON value into the canonical value_fields of schema
// (a parsed JSON Schema of the suite's subset): declared properties only,
// in any order (objects compare as maps), missing ones null.
func project(schema map[string]any, v any) any {
	if v == nil {
		return nil
	}
	typ := schema["type"]
	if l, ok := typ.([]any); ok {
		typ = l[0]
	}
	switch typ {
	case "object":
		m, _ := v.(map[string]any)
		out := row{}
		for name, sub := range schema["properties"].(map[string]any) {
			out[name] = project(sub.(map[string]any), m[name])
		}
		return out
	case "array":
		out := []any{}
		for _, e := range v.([]any) {
			out = append(out, project(schema["items"].(map[string]any), e))
		}
		return out
	case "string":
		if schema["format"] == "date-time" {
			tm, err := time.Parse(time.RFC3339Nano, v.(string))
			if err != nil {
				panic(err)
			}
			return ts(tm.UnixMicro())
		}
	}
	return v
}

// typedFields returns the value_fields function of a schema's text.
func typedFields(schemaText string) func([]byte) any {
	var s map[string]any
	if err := json.Unmarshal([]byte(schemaText), &s); err != nil {
		panic(err)
	}
	return func(b []byte) any {
		var v any
		if b == nil || json.Unmarshal(b, &v) != nil {
			return nil
		}
		return project(s, v)
	}
}

// normalize turns rows (from an engine or from the dataset) into their
// canonical JSON texts sorted by partition and offset; a rejected row's
// reason must be a non-empty string and compares as "*".
func normalize(t *testing.T, rows []row) []string {
	t.Helper()
	type keyed struct {
		p, o float64
		s    string
	}
	var ks []keyed
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any // through JSON, numbers are float64 on both sides
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if reason, ok := m["reason"]; ok {
			if s, _ := reason.(string); s == "" {
				t.Errorf("rejected row %v: reason %v, want a non-empty string", m["offset"], reason)
			}
			m["reason"] = "*"
		}
		b, _ = json.Marshal(m)
		p, _ := m["partition"].(float64)
		o, _ := m["offset"].(float64)
		ks = append(ks, keyed{p, o, string(b)})
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].p != ks[j].p {
			return ks[i].p < ks[j].p
		}
		return ks[i].o < ks[j].o
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	return out
}

// compareRows reports the differences between an engine's rows and the
// dataset's, row by row; it returns whether they are equal.
func compareRows(t *testing.T, what string, got, want []row) bool {
	t.Helper()
	g, w := normalize(t, got), normalize(t, want)
	bad := 0
	for i := 0; i < max(len(g), len(w)) && bad < 5; i++ {
		var gs, ws string
		if i < len(g) {
			gs = g[i]
		}
		if i < len(w) {
			ws = w[i]
		}
		if gs != ws {
			t.Errorf("%s: row %d:\n got  %s\n want %s", what, i, gs, ws)
			bad++
		}
	}
	if len(g) != len(w) {
		t.Errorf("%s: %d rows, want %d", what, len(g), len(w))
		return false
	}
	return bad == 0
}

// flat returns rows with only the flat fixed columns (Spark's vectorized
// read).
func flat(rows []row) []row {
	var out []row
	for _, r := range rows {
		f := row{}
		for _, k := range []string{"partition", "offset", "timestamp", "append_time", "key", "value"} {
			f[k] = r[k]
		}
		out = append(out, f)
	}
	return out
}

// dayCounts counts rows per UTC day of their timestamp.
func dayCounts(rows []row) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		us := r["timestamp"].(map[string]any)["$t"].(int64)
		out[time.UnixMicro(us).UTC().Format("2006-01-02")]++
	}
	return out
}

// produceQuiet produces recs without recording them (the live table's
// load); errors are ignored, the checks read the table's own snapshots.
func (d *dataset) produceQuiet(ctx context.Context, c *cluster, topic string, part int32, recs []kbatch.Record) {
	b, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		return
	}
	_, _ = c.client.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: topic,
		Partitions: []*floev1.PartitionBatches{{Partition: part, Batches: b}}})
}
