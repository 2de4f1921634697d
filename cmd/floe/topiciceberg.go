package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// printIceberg adds the topic's Iceberg output to `floe topic describe`:
// its settings, the table's watermark per partition as the compactor last
// recorded it, and whether retention waits for the table.
func printIceberg(w io.Writer, resp *floev1.DescribeTopicResponse) {
	ic := resp.GetIceberg()
	if ic == nil {
		return
	}
	if !ic.GetEnabled() {
		fmt.Fprintln(w, "iceberg: off (iceberg.enabled=false)")
		return
	}
	lag := time.Duration(ic.GetLagMs()) * time.Millisecond
	if !ic.GetKnown() {
		fmt.Fprintf(w, "iceberg: on, lag %s; no table watermark recorded yet (retention waits for the table while a compactor writes tables)\n", lag)
		return
	}
	fmt.Fprintf(w, "iceberg: on, lag %s; the table trails the log by %d offsets", lag, ic.GetTrailingOffsets())
	if ic.GetTrailingOffsets() > 0 {
		fmt.Fprintf(w, ", %s, oldest %s", humanBytes(ic.GetTrailingBytes()), (time.Duration(ic.GetTrailingMs()) * time.Millisecond).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	if name := ic.GetTable(); name != "" {
		fmt.Fprintf(w, "iceberg: table %s: %d rows in %d data files, %s\n", name, ic.GetRows(), ic.GetDataFiles(), humanBytes(ic.GetDataBytes()))
	}
	if n := ic.GetRejectedRows(); n > 0 {
		fmt.Fprintf(w, "iceberg: %d rejected rows (values the value schema could not convert; see floe table describe)\n", n)
	}
	if id := ic.GetSnapshotId(); id != 0 {
		fmt.Fprintf(w, "iceberg: last snapshot %d at %s\n", id, time.UnixMilli(ic.GetSnapshotTimeMs()).UTC().Format(time.RFC3339))
	}
	if ms := ic.GetMaintainedMs(); ms != 0 {
		fmt.Fprintf(w, "iceberg: last maintained at %s\n", time.UnixMilli(ms).UTC().Format(time.RFC3339))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tTABLE WATERMARK\tRETENTION")
	for _, p := range resp.GetPartitions() {
		state := "free"
		if p.GetRetentionWaitsForIceberg() {
			state = fmt.Sprintf("waits for iceberg (keeps offsets >= %d)", p.GetIcebergWatermark())
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\n", p.GetPartition(), p.GetIcebergWatermark(), state)
	}
	tw.Flush()
}
