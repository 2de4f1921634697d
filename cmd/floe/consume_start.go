package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// Where `floe consume` starts, in kcat's and rpk's forms: earliest
// (beginning, start), latest (end), an offset, -N (N before the end of
// each partition), +N (N after its start), @TIME (the first record at or
// after it: unix ms or RFC 3339).

const startHelp = "earliest (or beginning, start), latest (or end), an offset, -N (N records before the end of each partition), " +
	"+N (N after its start), or @TIME (unix ms or RFC 3339)"

// startSpec is a parsed start position.
type startSpec struct {
	pos      *floev1.StartPosition // absolute; nil when relative
	relative int64                 // -N or +N
}

// isStart reports whether s reads as a start position (and not an output
// format): consume's -o takes both.
func isStart(s string) bool {
	_, err := parseStart(s)
	return err == nil
}

func parseStart(s string) (startSpec, error) {
	switch {
	case s == "earliest" || s == "beginning" || s == "start":
		return startSpec{pos: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}, nil
	case s == "latest" || s == "end":
		return startSpec{pos: &floev1.StartPosition{Position: &floev1.StartPosition_Latest{Latest: true}}}, nil
	case strings.HasPrefix(s, "@"):
		ts, err := parseTime(s[1:])
		if err != nil {
			return startSpec{}, err
		}
		return startSpec{pos: &floev1.StartPosition{Position: &floev1.StartPosition_TimestampMs{TimestampMs: ts}}}, nil
	case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n < 0 {
			return startSpec{}, fmt.Errorf("start %q: want -N or +N with N a number of records", s)
		}
		if s[0] == '-' {
			n = -n
		}
		return startSpec{relative: n}, nil
	default:
		off, err := strconv.ParseInt(s, 10, 64)
		if err != nil || off < 0 {
			return startSpec{}, fmt.Errorf("start %q is not %s", s, startHelp)
		}
		return startSpec{pos: &floev1.StartPosition{Position: &floev1.StartPosition_Offset{Offset: off}}}, nil
	}
}

// resolveStart turns the start into an offset per partition (those of
// partitions, or all), checked against each partition's log: an offset
// outside it is an error naming the partition.
func resolveStart(ctx context.Context, c *client.Client, topic string, partitions []int32, st startSpec) (map[int32]int64, error) {
	starts, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: topic, Partitions: partitions, Spec: floev1.OffsetSpec_OFFSET_SPEC_EARLIEST})
	if err != nil {
		return nil, err
	}
	ends, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: topic, Partitions: partitions, Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST})
	if err != nil {
		return nil, err
	}
	first := map[int32]int64{}
	for _, o := range starts.GetOffsets() {
		first[o.GetPartition()] = o.GetOffset()
	}
	var at map[int32]int64
	if st.pos != nil {
		req := &floev1.SubscribeRequest{Topic: topic, Partitions: partitions, Start: st.pos}
		if at, err = c.ResolveOffsets(ctx, req); err != nil {
			return nil, err
		}
	}
	out := map[int32]int64{}
	for _, e := range ends.GetOffsets() {
		p, end := e.GetPartition(), e.GetOffset()
		lo := first[p]
		var off int64
		switch {
		case st.pos == nil && st.relative < 0:
			off = max(lo, end+st.relative)
		case st.pos == nil:
			off = min(end, lo+st.relative)
		default:
			off = at[p]
		}
		if off < lo || off > end {
			holds := fmt.Sprintf("holds offsets %d to %d", lo, end-1)
			if lo == end {
				holds = fmt.Sprintf("is empty (its next offset is %d)", end)
			}
			return nil, fmt.Errorf("offset %d is outside partition %d, which %s: use earliest, latest, -N or +N", off, p, holds)
		}
		out[p] = off
	}
	return out, nil
}
