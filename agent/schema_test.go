package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/objectstore"
)

const orderSchema = `{"type":"object","required":["id","customer"],"properties":{
  "id":{"type":"integer"},
  "customer":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"age":{"type":"integer"}}},
  "at":{"type":"string","format":"date-time"}}}`

// A topic's value.schema: set at creation, values checked at produce
// (an invalid one refused with the record and path, nothing of its
// request appended; null values pass), changed compatibly only.
func TestValueSchema(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "bad", 1, map[string]string{"value.schema": `{"type":"object","properties":{"a":{"type":"date"}}}`}); code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), `$.a: type "date" is not supported`) {
		t.Fatalf("create with an unsupported schema: %v, want InvalidArgument naming $.a", err)
	}
	if _, err := h.c.CreateTopic(ctx, "orders", 2, map[string]string{"value.schema": orderSchema}); err != nil {
		t.Fatal(err)
	}
	good := []byte(`{"id":1,"customer":{"name":"ann","age":30},"at":"2024-03-01T10:00:00Z"}`)
	if _, err := h.c.Produce(ctx, "orders", 0, &floev1.Record{Value: good}, &floev1.Record{Key: []byte("k"), NullValue: true}); err != nil {
		t.Fatalf("valid value and a tombstone: %v", err)
	}
	for _, tc := range []struct {
		value []byte
		path  string
		msg   string
	}{
		{[]byte(`{"id":2,"customer":{"name":"bob","age":"old"}}`), "$.customer.age", "want integer, got string"},
		{[]byte(`{"id":2}`), "$.customer", "required, missing"},
		{[]byte(`{"id":2,"customer":{"name":"bob"},"at":"noon"}`), "$.at", "want a date-time string"},
		{[]byte(`not json`), "$", "not JSON"},
		{nil, "$", "not JSON"}, // empty, not null
	} {
		_, err := h.c.Produce(ctx, "orders", 0, &floev1.Record{Value: good}, &floev1.Record{Value: tc.value})
		ei := errorInfo(err)
		if code(err) != codes.InvalidArgument || ei.GetReason() != agent.ReasonInvalidValue ||
			ei.GetMetadata()["record"] != "1" || ei.GetMetadata()["path"] != tc.path ||
			!strings.Contains(err.Error(), "record 1") || !strings.Contains(err.Error(), tc.path+": "+tc.msg) {
			t.Errorf("produce %q: %v (info %v), want InvalidArgument %s naming record 1 and %s: %s",
				tc.value, err, ei, agent.ReasonInvalidValue, tc.path, tc.msg)
		}
	}
	f, err := h.c.Fetch(ctx, "orders", 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.GetRecords()); n != 2 {
		t.Fatalf("%d records in the log, want the 2 accepted (a refused request appends nothing)", n)
	}

	alter := func(s string) error {
		_, err := h.c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "orders", Set: map[string]string{"value.schema": s}})
		return err
	}
	incompatible := strings.Replace(orderSchema, `"age":{"type":"integer"}`, `"age":{"type":"string"}`, 1)
	if err := alter(incompatible); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "$.customer.age: type changed from integer to string") {
		t.Fatalf("incompatible change: %v, want InvalidArgument saying why", err)
	}
	if _, err := h.c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "orders", Remove: []string{"value.schema"}}); code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "cannot be removed") {
		t.Fatalf("removing the schema: %v, want InvalidArgument", err)
	}
	evolved := strings.Replace(orderSchema, `"at":{`, `"note":{"type":"string"},"at":{`, 1)
	if err := alter(evolved); err != nil {
		t.Fatalf("adding an optional field: %v", err)
	}
	// The agent checks against the new schema: a new field's type counts.
	if _, err := h.c.Produce(ctx, "orders", 0, &floev1.Record{Value: []byte(`{"id":3,"customer":{"name":"c"},"note":5}`)}); code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "$.note: want string, got number") {
		t.Fatalf("after evolution: %v, want the new field checked", err)
	}
	if _, err := h.c.Produce(ctx, "orders", 1, &floev1.Record{Value: []byte(`{"id":3,"customer":{"name":"c"},"note":"n"}`)}); err != nil {
		t.Fatal(err)
	}
	// A topic without a schema takes anything.
	if _, err := h.c.CreateTopic(ctx, "raw", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Produce(ctx, "raw", 0, &floev1.Record{Value: []byte("not json")}); err != nil {
		t.Fatal(err)
	}
}

// A schema changed through one agent reaches another agent's produce
// check within the topic cache's TTL, even while the other agent's index
// watches the topic (which lets readers trust their lookup longer).
func TestValueSchemaChangeReachesOtherAgents(t *testing.T) {
	meta := openSQLite(t)
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = time.Millisecond
	acfg.TopicCacheTTL = 100 * time.Millisecond
	a, b := startNode(t, meta, store, acfg, bcfg), startNode(t, meta, store, acfg, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	strict := `{"type":"object","required":["id","name"],"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`
	if _, err := a.c.CreateTopic(ctx, "s", 1, map[string]string{"value.schema": strict}); err != nil {
		t.Fatal(err)
	}
	// b produces and tails the topic: its index watches it.
	if _, err := b.c.Produce(ctx, "s", 0, &floev1.Record{Value: []byte(`{"id":1,"name":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	got := subscribeAll(t, ctx, b, "s", []int32{0})
	<-got
	noName := &floev1.Record{Value: []byte(`{"id":2}`)}
	if _, err := b.c.Produce(ctx, "s", 0, noName); code(err) != codes.InvalidArgument {
		t.Fatalf("before the change: %v, want InvalidArgument", err)
	}
	relaxed := strings.Replace(strict, `"required":["id","name"]`, `"required":["id"]`, 1)
	if _, err := a.c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "s", Set: map[string]string{"value.schema": relaxed}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * acfg.TopicCacheTTL)
	if _, err := b.c.Produce(ctx, "s", 0, noName); err != nil {
		t.Fatalf("after the change, on the other agent: %v", err)
	}
}
