package agent_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// A null value (a tombstone on compacted topics) and an empty value are
// different records: each comes back as it was produced, and a null value
// with bytes is refused.
func TestNullAndEmptyValues(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "kv", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Produce(ctx, "kv", 0,
		&floev1.Record{Key: []byte("a"), Value: []byte("1")},
		&floev1.Record{Key: []byte("a"), NullValue: true},
		&floev1.Record{Key: []byte("b")}, // empty, not null
	); err != nil {
		t.Fatal(err)
	}
	f, err := h.c.Fetch(ctx, "kv", 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := f.GetRecords()
	if len(got) != 3 {
		t.Fatalf("%d records, want 3", len(got))
	}
	if got[0].GetNullValue() || string(got[0].GetValue()) != "1" {
		t.Errorf("record 0: null %v value %q", got[0].GetNullValue(), got[0].GetValue())
	}
	if !got[1].GetNullValue() || len(got[1].GetValue()) != 0 {
		t.Errorf("record 1: null %v value %q, want a null value", got[1].GetNullValue(), got[1].GetValue())
	}
	if got[2].GetNullValue() {
		t.Errorf("record 2: an empty value came back null")
	}
	_, err = h.c.Produce(ctx, "kv", 0, &floev1.Record{Key: []byte("c"), Value: []byte("x"), NullValue: true})
	if code(err) != codes.InvalidArgument {
		t.Fatalf("null_value with a value: %v, want InvalidArgument", err)
	}
}
