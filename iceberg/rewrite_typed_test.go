package iceberg_test

import (
	"maps"
	"testing"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
)

// A typed table whose schema evolved (files of both schemas) is
// rewritten: the typed column reads the same before and after.
func TestRewriteTypedTable(t *testing.T) {
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		const topic = "typed.rewrite"
		v1, v2 := parseSchema(t, typedV1), parseSchema(t, typedV2)
		var all []iceberg.Row
		from := int64(0)
		for round := range 3 {
			vs := v1
			if round == 2 {
				vs = v2
			}
			cases := []typedCase{{`{"id":1,"name":"ann","user":{"name":"u","tags":["a"]},"nums":[1,2]}`, "", ""},
				{`{"id":"bad"}`, "", ""}, {`{"id":5,"note":"hi","user":{"name":"v","age":30}}`, "", ""}}
			rows, want := typedRows(cases, 0, from)
			appendTyped(t, w, topic, vs, rows, want)
			all, from = append(all, rows...), want[0]
		}
		tbl, err := w.Load(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		before := scanColumn(t, tbl, iceberg.ColValueFields)
		res, err := w.RewriteSmallFiles(ctx, topic, iceberg.RewriteOptions{MinFiles: 1})
		if err != nil || res.FilesAdded == 0 {
			t.Fatalf("rewrite %+v, %v", res, err)
		}
		if tbl, err = w.Load(ctx, topic); err != nil {
			t.Fatal(err)
		}
		after := scanColumn(t, tbl, iceberg.ColValueFields)
		if !maps.Equal(before, after) || len(after) != 9 {
			t.Errorf("value_fields before %v\nafter %v", before, after)
		}
		t.Logf("rewrite %+v; %d rows", res, len(after))
	})
}
