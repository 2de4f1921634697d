package agent

import (
	"context"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// describeIceberg adds the topic's Iceberg output to a DescribeTopic
// answer: its settings and, once a compactor recorded the table's
// watermark (in its lease cursor), the watermark per partition and whether
// retention waits for the table. A failure to read the watermark leaves it
// out (logged).
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
	wm, ok := metadata.ParseIcebergCursor(cur, d.Topic.ID)
	if !ok {
		return
	}
	ret, err := metadata.ParseRetention(d.Topic.Config)
	trimmed := err == nil && ret.Delete
	out.Known = true
	if id, ms, ok := metadata.ParseIcebergSnapshot(cur); ok {
		out.SnapshotId, out.SnapshotTimeMs = id, ms
	}
	for _, p := range resp.Partitions {
		p.IcebergWatermark = wm[p.Partition]
		out.TrailingOffsets += icebergTrailing(p.LogStartOffset, p.HighWatermark, p.IcebergWatermark)
		p.RetentionWaitsForIceberg = trimmed && p.IcebergWatermark < p.HighWatermark
	}
}

// icebergTrailing is how many offsets of the log (from its start) the
// table does not hold yet.
func icebergTrailing(logStart, hw, watermark int64) int64 {
	return max(0, hw-max(logStart, watermark))
}
