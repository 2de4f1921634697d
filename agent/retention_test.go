package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// DeleteRecords moves the log start: fetches below it are OutOfRange with
// the valid range, ListOffsets earliest and DescribeTopic reflect it, and
// bad requests get statuses a client can act on.
func TestDeleteRecordsRPC(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "dr", 2, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var recs []*floev1.Record
		for i := range 10 {
			recs = append(recs, &floev1.Record{Value: []byte(fmt.Sprintf("v%d", i))})
		}
		if _, err := h.c.Produce(ctx, "dr", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := h.c.Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: "dr", Partition: 0, Offset: 10})
	if err != nil || resp.GetLogStartOffset() != 10 || resp.GetHighWatermark() != 20 {
		t.Fatalf("DeleteRecords(10) = %v, %v", resp, err)
	}
	_, err = h.c.Fetch(ctx, "dr", 0, 5, 0, 0)
	ei := errorInfo(err)
	if code(err) != codes.OutOfRange || ei.GetMetadata()["log_start_offset"] != "10" || ei.GetMetadata()["high_watermark"] != "20" {
		t.Errorf("fetch below the log start: %v (info %v), want OutOfRange [10, 20]", err, ei.GetMetadata())
	}
	if f, err := h.c.Fetch(ctx, "dr", 0, 10, 0, 0); err != nil || len(f.GetRecords()) != 10 || f.GetLogStartOffset() != 10 {
		t.Errorf("fetch at the log start: %d records, log start %d, %v", len(f.GetRecords()), f.GetLogStartOffset(), err)
	}
	lo, err := h.c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: "dr", Partitions: []int32{0}, Spec: floev1.OffsetSpec_OFFSET_SPEC_EARLIEST})
	if err != nil || len(lo.GetOffsets()) != 1 || lo.GetOffsets()[0].GetOffset() != 10 {
		t.Errorf("ListOffsets earliest = %v, %v; want 10", lo, err)
	}
	d, err := h.c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "dr"})
	if err != nil || d.GetPartitions()[0].GetLogStartOffset() != 10 || d.GetStorage().GetLiveBytes() == 0 ||
		d.GetStorage().GetDeadBytes() == 0 || d.GetStorage().GetFiles() != 2 || d.GetDeletionQueue() == nil {
		t.Errorf("DescribeTopic = %v, %v; want log start 10, live and dead bytes, 2 files, a deletion queue", d, err)
	}
	for _, tc := range []struct {
		req  *floev1.DeleteRecordsRequest
		want codes.Code
	}{
		{&floev1.DeleteRecordsRequest{Topic: "dr", Partition: 0, Offset: 21}, codes.InvalidArgument},
		{&floev1.DeleteRecordsRequest{Topic: "dr", Partition: 0, Offset: -2}, codes.InvalidArgument},
		{&floev1.DeleteRecordsRequest{Topic: "dr", Partition: 7, Offset: 0}, codes.NotFound},
		{&floev1.DeleteRecordsRequest{Topic: "nope", Partition: 0, Offset: 0}, codes.NotFound},
		{&floev1.DeleteRecordsRequest{Topic: "bad name", Partition: 0, Offset: 0}, codes.InvalidArgument},
	} {
		if _, err := h.c.Topics.DeleteRecords(ctx, tc.req); code(err) != tc.want {
			t.Errorf("DeleteRecords(%v) = %v, want %v", tc.req, err, tc.want)
		}
	}
	if resp, err := h.c.Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: "dr", Partition: 0, Offset: -1}); err != nil || resp.GetLogStartOffset() != 20 {
		t.Errorf("DeleteRecords(-1) = %v, %v; want log start 20", resp, err)
	}
}

// AlterTopicConfig changes retention settings after creation, validated.
func TestAlterTopicConfigRPC(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "bad", 1, map[string]string{"retention.ms": "a week"}); code(err) != codes.InvalidArgument {
		t.Errorf("CreateTopic(retention.ms=a week) = %v, want InvalidArgument", err)
	}
	if _, err := h.c.CreateTopic(ctx, "typo", 1, map[string]string{"retenton.ms": "1000"}); code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "did you mean retention.ms?") {
		t.Errorf("CreateTopic(retenton.ms) = %v, want InvalidArgument with a did-you-mean", err)
	}
	if _, err := h.c.CreateTopic(ctx, "alt", 1, map[string]string{"retention.ms": "1000", "iceberg.lag": "1m"}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "alt",
		Set: map[string]string{"retention.bytes": "1048576"}, Remove: []string{"iceberg.lag"}})
	cfg := resp.GetTopic().GetConfig()
	if err != nil || cfg["retention.bytes"] != "1048576" || cfg["retention.ms"] != "1000" || len(cfg) != 2 {
		t.Fatalf("AlterTopicConfig = %v, %v", resp, err)
	}
	if d, _ := h.c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "alt"}); d.GetTopic().GetConfig()["retention.bytes"] != "1048576" {
		t.Errorf("DescribeTopic config after alter: %v", d.GetTopic().GetConfig())
	}
	for _, tc := range []struct {
		req  *floev1.AlterTopicConfigRequest
		want codes.Code
	}{
		{&floev1.AlterTopicConfigRequest{Name: "alt", Set: map[string]string{"retention.bytes": "-5"}}, codes.InvalidArgument},
		{&floev1.AlterTopicConfigRequest{Name: "alt"}, codes.InvalidArgument},
		{&floev1.AlterTopicConfigRequest{Name: "alt", Set: map[string]string{"foo": "bar"}}, codes.InvalidArgument},
		{&floev1.AlterTopicConfigRequest{Name: "nope", Set: map[string]string{"retention.ms": "1"}}, codes.NotFound},
		{&floev1.AlterTopicConfigRequest{Name: "", Set: map[string]string{"retention.ms": "1"}}, codes.InvalidArgument},
	} {
		if _, err := h.c.Topics.AlterTopicConfig(ctx, tc.req); code(err) != tc.want {
			t.Errorf("AlterTopicConfig(%v) = %v, want %v", tc.req, err, tc.want)
		}
	}
}
