package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

func runConsume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe consume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := addrFlag(fs)
	partition := fs.Int("partition", -1, "partition (default: all)")
	from := fs.String("from", "earliest", "earliest, latest, an offset, or @timestamp (unix ms or RFC 3339)")
	follow := fs.Bool("follow", false, "keep waiting for new records (otherwise stop at the end of the log)")
	fs.BoolVar(follow, "f", false, "short for -follow")
	maxRecords := fs.Int64("max", 0, "stop after this many records (0: no limit)")
	printKey := fs.Bool("print-key", false, "print the key before the value")
	printOffset := fs.Bool("print-offset", false, "print partition and offset before the value")
	sep := fs.String("separator", "\t", "separator between printed fields")
	if err := fs.Parse(reorder(args)); err != nil {
		return errUsage
	}
	topic := fs.Arg(0)
	if topic == "" {
		return errors.New("consume: a topic name is required")
	}
	start, err := parseFrom(*from)
	if err != nil {
		return err
	}
	c, err := dial(*addr)
	if err != nil {
		return err
	}
	defer c.Close()

	var parts []int32
	if *partition >= 0 {
		parts = []int32{int32(*partition)}
	}
	req := &floev1.SubscribeRequest{Topic: topic, Partitions: parts, Start: start}
	// Without -follow: resolve start and end offsets now and stop at the end.
	remaining := map[int32]int64{} // partition -> end offset still to reach
	if !*follow {
		req.Offsets = map[int32]int64{}
		startSpec, ts := floev1.OffsetSpec_OFFSET_SPEC_EARLIEST, int64(0)
		switch p := start.GetPosition().(type) {
		case *floev1.StartPosition_Latest:
			startSpec = floev1.OffsetSpec_OFFSET_SPEC_LATEST
		case *floev1.StartPosition_TimestampMs:
			startSpec, ts = floev1.OffsetSpec_OFFSET_SPEC_TIMESTAMP, p.TimestampMs
		}
		starts, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: topic, Partitions: parts, Spec: startSpec, TimestampMs: ts})
		if err != nil {
			return fmt.Errorf("consume %q: %w", topic, err)
		}
		ends, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: topic, Partitions: parts, Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST})
		if err != nil {
			return fmt.Errorf("consume %q: %w", topic, err)
		}
		for i, s := range starts.GetOffsets() {
			off := s.GetOffset()
			if o, ok := start.GetPosition().(*floev1.StartPosition_Offset); ok {
				off = o.Offset
				if end := ends.GetOffsets()[i].GetOffset(); off > end {
					return fmt.Errorf("consume %q: offset %d of partition %d is past its end (%d)", topic, off, s.GetPartition(), end)
				}
			}
			req.Offsets[s.GetPartition()] = off
			if end := ends.GetOffsets()[i].GetOffset(); off < end {
				remaining[s.GetPartition()] = end
			}
		}
		if len(remaining) == 0 {
			return nil
		}
		req.Partitions = nil
		for p := range remaining {
			req.Partitions = append(req.Partitions, p)
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	var n int64
	err = c.Subscribe(ctx, req, func(resp *floev1.SubscribeResponse) error {
		for _, r := range resp.GetRecords() {
			if !*follow {
				end, ok := remaining[r.GetPartition()]
				if !ok || r.GetOffset() >= end {
					continue
				}
			}
			if *printOffset {
				fmt.Fprintf(w, "%d%s%d%s", r.GetPartition(), *sep, r.GetOffset(), *sep)
			}
			if *printKey {
				w.Write(r.GetKey())
				w.WriteString(*sep)
			}
			w.Write(r.GetValue())
			w.WriteByte('\n')
			n++
			if *maxRecords > 0 && n >= *maxRecords {
				return client.ErrStop
			}
			if !*follow && r.GetOffset() >= remaining[r.GetPartition()]-1 {
				delete(remaining, r.GetPartition())
			}
		}
		if *follow {
			return w.Flush()
		}
		if len(remaining) == 0 {
			return client.ErrStop
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("consume %q: %w", topic, err)
	}
	return nil
}
