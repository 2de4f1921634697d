package console_test

import (
	"context"
	"testing"

	"github.com/floe-broker/floe/console"
	"github.com/floe-broker/floe/metadata"
)

// TopicTables lists the topics with Iceberg output on, under the table
// name given, with the offsets the table trails (no compactor ran: all of
// them); a topic with iceberg.enabled=false is left out.
func TestTopicTables(t *testing.T) {
	f := newFixture(t, console.Options{})
	ctx := context.Background()
	on, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "orders.v1", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "off", Partitions: 1,
		Config: map[string]string{"iceberg.enabled": "false"}}); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "f1", on.ID, map[int32]int32{0: 3, 1: 4}, 100)
	src := console.TopicTables(func() console.Source { return f.ag }, "floe", func(s string) string { return "t_" + s }, 10)
	tables, err := src.IcebergTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 {
		t.Fatalf("tables %+v, want only orders.v1", tables)
	}
	tb := tables[0]
	if tb.Topic != "orders.v1" || tb.Table != "t_orders.v1" || tb.Namespace != "floe" || tb.CompactionLagRecords != 7 {
		t.Fatalf("table %+v, want orders.v1 as t_orders.v1 in floe trailing 7 records", tb)
	}
	if got, err := console.TopicTables(func() console.Source { return nil }, "floe", nil, 10).IcebergTables(ctx); err != nil || got != nil {
		t.Fatalf("starting agent: %v %v", got, err)
	}
}
