package sqlite

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A row with a nested JSON value (a producer's batches) stays one valid
// JSON array of rows.
func TestJSONRowsWithNestedJSON(t *testing.T) {
	var r jsonRows
	r.addWithJSON([]byte(`[{"s":0,"o":5}]`), 1, 2)
	r.add(7)
	r.addWithJSON([]byte(`[]`), 3, 4)
	var got []any
	if err := json.Unmarshal([]byte(r.String()), &got); err != nil {
		t.Fatalf("%s: %v", r.String(), err)
	}
	want := []any{
		[]any{1.0, 2.0, []any{map[string]any{"s": 0.0, "o": 5.0}}},
		[]any{7.0},
		[]any{3.0, 4.0, []any{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %s decode to %v, want %v", r.String(), got, want)
	}
}
