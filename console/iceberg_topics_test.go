package console_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
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

// failingDescribe is a Source whose topic descriptions fail.
type failingDescribe struct {
	console.Source
	err error
}

func (f failingDescribe) DescribeTopic(context.Context, *floev1.DescribeTopicRequest) (*floev1.DescribeTopicResponse, error) {
	return nil, f.err
}

// A topic deleted meanwhile is left out; any other failure is reported,
// not shown as an empty list.
func TestTopicTablesErrors(t *testing.T) {
	f := newFixture(t, console.Options{})
	ctx := context.Background()
	if _, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	name := func(s string) string { return s }
	gone := console.TopicTables(func() console.Source {
		return failingDescribe{f.ag, status.Error(codes.NotFound, "deleted")}
	}, "floe", name, 10)
	if got, err := gone.IcebergTables(ctx); err != nil || len(got) != 0 {
		t.Fatalf("deleted topic: %v %v, want no tables and no error", got, err)
	}
	down := console.TopicTables(func() console.Source {
		return failingDescribe{f.ag, status.Error(codes.Unavailable, "store down")}
	}, "floe", name, 10)
	if _, err := down.IcebergTables(ctx); status.Code(err) != codes.Unavailable {
		t.Fatalf("store down: %v, want the Unavailable error", err)
	}
}

// The figures the compactor recorded for a table (its identifier, size,
// last maintenance, rows of its rejected table) and its lag in bytes and time reach the console.
func TestTopicTablesFigures(t *testing.T) {
	f := newFixture(t, console.Options{})
	ctx := context.Background()
	tp, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "figures", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.commit(t, "f1", tp.ID, map[int32]int32{0: 5}, 100)
	lease := metadata.IcebergLease(tp.Name)
	if ok, err := f.meta.AcquireLease(ctx, lease, "c", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	cur := metadata.IcebergCursor{TopicID: tp.ID, Watermark: map[int32]int64{0: 2}, HasTotals: true, Rows: 2, DataFiles: 1,
		DataBytes: 900, MaintainedMs: 1700000100000, Table: "ns.figures_t", SnapshotID: 5, SnapshotMs: 1700000000000,
		HasRejected: true, RejectedRows: 3, RejectedDataFiles: 1, RejectedDataBytes: 700}
	if _, err := f.meta.SetJobCursor(ctx, lease, "c", cur.String()); err != nil {
		t.Fatal(err)
	}
	tables, err := console.TopicTables(func() console.Source { return f.ag }, "floe", func(s string) string { return s }, 10).IcebergTables(ctx)
	if err != nil || len(tables) != 1 {
		t.Fatalf("tables %+v, %v", tables, err)
	}
	tb := tables[0]
	if tb.Namespace != "ns" || tb.Table != "figures_t" || tb.Rows != 2 || tb.DataFiles != 1 || tb.DataBytes != 900 ||
		!tb.MaintainedTime.Equal(time.UnixMilli(1700000100000)) || tb.CompactionLagRecords != 3 || tb.CompactionLagBytes <= 0 ||
		tb.RejectedRows != 3 {
		t.Errorf("table %+v", tb)
	}
}
