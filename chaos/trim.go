package chaos

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/chaos/history"
	"github.com/floe-broker/floe/iceberg"
)

// logStartOf is the log start an OutOfRange answer names (ok false for
// any other error): retention deleted the offset asked for.
func logStartOf(err error) (int64, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.OutOfRange {
		return 0, false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			if v, err := strconv.ParseInt(ei.GetMetadata()["log_start_offset"], 10, 64); err == nil {
				return v, true
			}
		}
	}
	return 0, false
}

// trimmedPast is where a reader at offset of partition p goes on: the
// log start when retention deleted offset, else offset.
func (w *workload) trimmedPast(ctx context.Context, p int32, offset int64) int64 {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := w.client(int(p)).Fetch(fctx, w.topic, p, offset, 1, 0)
	if ls, ok := logStartOf(err); ok && ls > offset {
		return ls
	}
	return offset
}

// watchRetention records every second, until ctx ends, each partition's
// log start straight from PostgreSQL (on a topic with retention.raw.ms, the
// raw log start) and then, with a table, the table's watermark (history
// LogStart ops), for the retention invariants (retentionViolations).
func (w *workload) watchRetention(ctx context.Context, d *Deployment, table bool) {
	var wr *iceberg.Writer
	defer func() {
		if wr != nil {
			_ = wr.Close()
		}
	}()
	for sleep(ctx, time.Second) {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		starts, err := w.logStarts(sctx, d.directPG())
		if err != nil {
			cancel()
			continue
		}
		var wm iceberg.Watermark
		if table {
			if wr == nil {
				if wr, err = openTable(sctx, d, w); err != nil {
					wr = nil
				}
			}
			if wr != nil {
				if wm, err = wr.Watermark(sctx, w.topic); err != nil {
					_ = wr.Close() // the primary may have moved: open again
					wr = nil
				}
			}
		}
		cancel()
		if table && wm == nil {
			continue // no watermark read after the log starts: nothing to judge
		}
		for p, ls := range starts {
			w.add(history.Op{Type: history.LogStart, Partition: p, Offset: ls, From: wm[p]})
		}
	}
}

// logStarts reads the topic's partitions' log starts from the metadata.
func (w *workload) logStarts(ctx context.Context, dsn string) (map[int32]int64, error) {
	out := map[int32]int64{}
	err := withConn(ctx, dsn, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT p.partition, p.log_start_offset FROM partitions p JOIN topics t ON t.id = p.topic_id
			WHERE t.name = $1 AND t.deleted_at IS NULL`, w.topic)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p int32
			var ls int64
			if err := rows.Scan(&p, &ls); err != nil {
				return err
			}
			out[p] = ls
		}
		return rows.Err()
	})
	return out, err
}

// retentionWithin counts the acknowledged records deleted before they
// were retention old: below a log start the store had at a LogStart op's
// Time (or the final read's, on a topic without retention.raw.ms) although
// their send was handed to the client less than retention before. A record
// is appended after its send started and retention deletes only what was
// appended retention before the pass, so a correct rule never shows one.
func retentionWithin(ops []history.Op, retention time.Duration, raw bool) int {
	type sample struct{ at, start int64 }
	samples := map[int32][]sample{}
	for _, op := range ops {
		switch {
		case op.Type == history.LogStart, op.Type == history.FinalRead && !raw:
			from := op.Offset
			if op.Type == history.FinalRead {
				from = op.From
			}
			samples[op.Partition] = append(samples[op.Partition], sample{op.Time, from})
		}
	}
	n := 0
	for _, op := range ops {
		if op.Type != history.Send || op.Outcome != history.OK {
			continue
		}
		for _, s := range samples[op.Partition] {
			if op.Offset < s.start && op.Start > s.at-int64(retention) {
				n++
				break
			}
		}
	}
	return n
}

// RetentionBroken is the fault op of Config.breakRetention's deletion.
const RetentionBroken = "retention-broken"

// breakRetention waits after, then deletes every record of partition 0
// (DeleteRecords to the high watermark): what a retention rule that
// ignored retention.ms and the table's hold would do.
func (w *workload) breakRetention(ctx context.Context, after time.Duration) {
	if !sleep(ctx, after) {
		return
	}
	w.add(history.Op{Type: history.Fault, Value: RetentionBroken, Detail: "partition 0 to its head"})
	_ = retry(ctx, 10*time.Second, func(ctx context.Context) error {
		_, err := w.client(0).Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: w.topic, Partition: 0, Offset: -1})
		return err
	})
}

// retentionMoved sums the partitions' last log starts the LogStart ops
// saw.
func retentionMoved(ops []history.Op) int64 {
	last := map[int32]int64{}
	for _, op := range ops {
		if op.Type == history.LogStart {
			last[op.Partition] = max(last[op.Partition], op.Offset)
		}
	}
	var n int64
	for _, o := range last {
		n += o
	}
	return n
}
