package agent

import (
	"context"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// describeIceberg adds the topic's Iceberg output to a DescribeTopic
// answer: its settings and, once a compactor recorded the table's
// watermark (in its lease cursor), the watermark per partition, whether
// retention waits for the table, the table's figures the compactor
// recorded (identifier, last snapshot, rows, data files and bytes, last
// maintenance, rows of its rejected table) and how far it trails the log (offsets; bytes and age of
// the batches above the watermark, from FindBatches, extrapolated past
// metadata.IcebergLagBytesCap a partition and icebergLagLookups
// partitions). A failure to read the cursor
// leaves it out (logged); one to read the batches leaves the bytes and
// age out.
func (a *Agent) describeIceberg(ctx context.Context, d metadata.TopicDescription, resp *floev1.DescribeTopicResponse) {
	ic, err := metadata.ParseIceberg(d.Topic.Config)
	if err != nil {
		return // stored before configs were validated: the compactor ignores it too
	}
	out := &floev1.IcebergOutput{Enabled: ic.Enabled, LagMs: ic.Lag.Milliseconds()}
	resp.Iceberg = out
	if !ic.Enabled {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, describeStorageTimeout)
	defer cancel()
	cur, err := a.meta.JobCursor(ctx, metadata.IcebergLease(d.Topic.Name))
	if err != nil {
		a.log.Warn("describe topic: iceberg watermark unavailable", "topic", d.Topic.Name, "err", err)
		return
	}
	c, ok := metadata.ReadIcebergCursor(cur)
	if !ok || c.TopicID != d.Topic.ID {
		return
	}
	wm := c.Watermark
	ret, err := metadata.ParseRetention(d.Topic.Config)
	trimmed := err == nil && ret.Delete
	out.Known = true
	out.SnapshotId, out.SnapshotTimeMs = c.SnapshotID, c.SnapshotMs
	out.Rows, out.DataFiles, out.DataBytes = c.Rows, c.DataFiles, c.DataBytes
	out.MaintainedMs, out.Table = c.MaintainedMs, c.Table
	out.RejectedRows = c.RejectedRows // of the topic's <topic>_rejected table; 0 when it has none
	now, err := a.meta.Now(ctx)
	if err != nil {
		a.log.Warn("describe topic: iceberg lag unavailable", "topic", d.Topic.Name, "err", err)
	}
	var lookups, seenRecords, unseenRecords int64
	for _, p := range resp.Partitions {
		p.IcebergWatermark = wm[p.Partition]
		trailing := icebergTrailing(p.LogStartOffset, p.HighWatermark, p.IcebergWatermark)
		out.TrailingOffsets += trailing
		p.RetentionWaitsForIceberg = trimmed && p.IcebergWatermark < p.HighWatermark
		if err != nil || trailing == 0 {
			continue
		}
		if lookups == icebergLagLookups {
			unseenRecords += trailing
			continue
		}
		lookups++
		refs, _, ferr := a.meta.FindBatches(ctx, d.Topic.ID, p.Partition, max(p.LogStartOffset, p.IcebergWatermark), metadata.IcebergLagBytesCap)
		if ferr != nil {
			unseenRecords += trailing // retention moved meanwhile
			continue
		}
		_, bytes, age := metadata.IcebergLag(p.LogStartOffset, p.HighWatermark, p.IcebergWatermark, refs, now.UnixMilli())
		seenRecords += trailing
		out.TrailingBytes += bytes
		out.TrailingMs = max(out.TrailingMs, age)
	}
	if seenRecords > 0 && unseenRecords > 0 {
		out.TrailingBytes += unseenRecords * out.TrailingBytes / seenRecords
	}
}

// icebergLagLookups bounds the partitions whose batches one DescribeTopic
// looks up for the table's lag in bytes and time (one FindBatches each):
// the bytes of the others are extrapolated, and their age is not seen.
const icebergLagLookups = 32

// icebergTrailing is how many offsets of the log (from its start) the
// table does not hold yet.
func icebergTrailing(logStart, hw, watermark int64) int64 {
	return max(0, hw-max(logStart, watermark))
}
