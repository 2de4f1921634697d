package agent_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// earliestOf is ListOffsets earliest of topic's partitions.
func earliestOf(ctx context.Context, t *testing.T, c *client.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: topic, Spec: floev1.OffsetSpec_OFFSET_SPEC_EARLIEST})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, o := range lo.GetOffsets() {
		out[o.GetPartition()] = o.GetOffset()
	}
	return out
}

// describedStarts is DescribeTopic's log start per partition.
func describedStarts(ctx context.Context, t *testing.T, c *client.Client, topic string) map[int32]int64 {
	t.Helper()
	d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, p := range d.GetPartitions() {
		out[p.GetPartition()] = p.GetLogStartOffset()
	}
	return out
}

// TestTableLogStart: on a topic served partly from its table, the log
// start is the table's: DescribeTopic reports it, a group's lag counts
// from it, and DeleteRecords behaves as Kafka's over table and raw files
// together: below the raw log start it moves the log start (the table's
// rows below are no longer served, on this agent and on another), above
// it the raw log start moves too, and it never moves back.
func TestTableLogStart(t *testing.T) {
	e := newTableEnv(t)
	c := e.reader(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for p, s := range describedStarts(ctx, t, c, e.topic) {
		if s != 0 {
			t.Errorf("describe: partition %d log start %d, want 0 (the table's first offset; raw from %d)", p, s, e.starts[p])
		}
	}
	// A group at offset 0 has every record to consume.
	if _, err := c.Groups().CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "behind", MemberEpoch: -1,
		Offsets: []*floev1.OffsetCommit{{Topic: e.topic, Partition: 0, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	g, err := c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "behind"})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.GetPartitions()) != 1 || g.GetPartitions()[0].GetLagRecords() != e.hws[0] || g.GetPartitions()[0].GetLogStartOffset() != 0 {
		t.Fatalf("lag of a group at 0: %v, want %d records from log start 0", g.GetPartitions(), e.hws[0])
	}

	del := func(p int32, off int64) *floev1.DeleteRecordsResponse {
		t.Helper()
		resp, err := c.Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: e.topic, Partition: p, Offset: off})
		if err != nil {
			t.Fatalf("delete records of partition %d to %d: %v", p, off, err)
		}
		return resp
	}
	// Below the raw log start: the log start moves into the table.
	below := e.starts[0] / 3
	if resp := del(0, below); resp.GetLogStartOffset() != below || resp.GetHighWatermark() != e.hws[0] {
		t.Fatalf("delete records below the raw log start: %v, want log start %d", resp, below)
	}
	_, err = c.Fetch(ctx, e.topic, 0, below-1, 3000, 0)
	if st, _ := status.FromError(err); st.Code() != codes.OutOfRange {
		t.Fatalf("fetch below the deleted offset: %v, want OutOfRange", err)
	}
	resp, err := c.Fetch(ctx, e.topic, 0, below, 3000, 0)
	if err != nil || len(resp.GetRecords()) == 0 || resp.GetRecords()[0].GetOffset() != below || resp.GetLogStartOffset() != below {
		t.Fatalf("fetch at the deleted offset: %v, %v", resp, err)
	}
	// Above it: the raw log start moves, and no table row is served.
	above := e.starts[1] + 10
	if resp := del(1, above); resp.GetLogStartOffset() != above {
		t.Fatalf("delete records above the raw log start: %v, want log start %d", resp, above)
	}
	for _, off := range []int64{0, e.starts[1]} {
		_, err = c.Fetch(ctx, e.topic, 1, off, 3000, 0)
		if status.Code(err) != codes.OutOfRange {
			t.Fatalf("fetch of partition 1 at %d below the deleted offset %d: %v, want OutOfRange", off, above, err)
		}
	}
	// Never back.
	if resp := del(0, below/2); resp.GetLogStartOffset() != below {
		t.Fatalf("delete records back: %v, want log start %d kept", resp, below)
	}
	want := map[int32]int64{0: below, 1: above}
	for name, got := range map[string]map[int32]int64{"ListOffsets earliest": earliestOf(ctx, t, c, e.topic), "describe": describedStarts(ctx, t, c, e.topic)} {
		if got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	g, err = c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "behind"})
	if err != nil {
		t.Fatal(err)
	}
	if l := g.GetPartitions()[0]; l.GetLagRecords() != e.hws[0]-below {
		t.Errorf("lag after the delete: %v, want %d records", l, e.hws[0]-below)
	}
	// Another agent (nothing cached) serves the same log starts.
	other := e.reader(t, nil)
	if got := earliestOf(ctx, t, other, e.topic); got[0] != want[0] || got[1] != want[1] {
		t.Errorf("another agent's ListOffsets earliest: %v, want %v", got, want)
	}
	_, err = other.Fetch(ctx, e.topic, 0, 0, 3000, 0)
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("another agent's fetch below the deleted offset: %v, want OutOfRange", err)
	}
	// Past the high watermark is refused, and changes nothing.
	if _, err := c.Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: e.topic, Partition: 0, Offset: e.hws[0] + 1}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("delete records past the high watermark: %v, want InvalidArgument", err)
	}
	if got := earliestOf(ctx, t, c, e.topic); got[0] != below {
		t.Errorf("after a refused delete: earliest %v", got)
	}
}
