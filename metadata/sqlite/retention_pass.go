package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// The statements of a partition's retention check, as PostgreSQL's
// (metadata/postgres/retention_pass.go) one partition at a time: SQLite
// is in process, a statement costs no round trip.
const (
	// retentionFromSQL is the base offset of the batch holding the log start.
	retentionFromSQL = `SELECT coalesce(max(base_offset), 0) FROM batches WHERE topic_id = ?1 AND partition = ?2 AND base_offset <= ?3`
	// retentionYoungSQL is the first batch appended at or after the
	// cutoff (?5) among the first ?6 from the log start (?3, the batch
	// holding it at ?7) below the high watermark (?4).
	retentionYoungSQL = `
SELECT w.base_offset, w.append_time
  FROM (SELECT b.base_offset, b.append_time FROM batches b
         WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.base_offset >= ?7 AND b.last_offset >= ?3 AND b.base_offset < ?4
         ORDER BY b.base_offset LIMIT ?6) w
 WHERE w.append_time >= ?5
 ORDER BY w.base_offset LIMIT 1`
	// retentionWindowSQL is the last offset and count of those ?6 batches.
	retentionWindowSQL = `
SELECT max(w.last_offset), count(*)
  FROM (SELECT b.last_offset FROM batches b
         WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.base_offset >= ?7 AND b.last_offset >= ?3 AND b.base_offset < ?4
         ORDER BY b.base_offset LIMIT ?6) w`
	// retentionAddedSQL sums the bytes of the batches from ?5 below the
	// high watermark.
	retentionAddedSQL = `
SELECT coalesce(sum(byte_length), 0) FROM batches
 WHERE topic_id = ?1 AND partition = ?2 AND base_offset >= ?5 AND last_offset >= ?3 AND base_offset < ?4`
	// retentionCutSQL is past the newest batch that makes the bytes from
	// the head exceed ?5, with the bytes kept.
	retentionCutSQL = `
SELECT x.last_offset + 1, x.s - x.byte_length
  FROM (SELECT b.last_offset, b.byte_length, sum(b.byte_length) OVER (ORDER BY b.base_offset DESC) AS s
          FROM batches b
         WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.last_offset >= ?3 AND b.base_offset < ?4) x
 WHERE x.s > ?5
 LIMIT 1`
)

// RetentionPass checks each partition in one write transaction for the
// topic.
func (s *Store) RetentionPass(ctx context.Context, topicID int64, r metadata.Retention, known []metadata.RetentionKnown) ([]metadata.RetentionCheck, error) {
	r = r.Raw() // the raw files' time limit (retention.raw.ms where a table holds them)
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var checks []metadata.RetentionCheck
	err := s.write(ctx, func(tx *sql.Tx) error {
		checks = nil
		states, err := partitionStates(ctx, tx, topicID)
		if err != nil {
			return err
		}
		if len(states) == 0 {
			return fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
		}
		look := map[int32]metadata.RetentionKnown{}
		for _, k := range known {
			look[k.Partition] = k
		}
		nowMs := time.Now().UnixMilli()
		for _, st := range states {
			k, ok := look[st.Partition]
			if st.LogStartOffset >= st.HighWatermark || (known != nil && !ok) {
				continue
			}
			if !ok {
				k.HighWatermark = -1
			}
			c, err := retentionCheck(ctx, tx, topicID, st, r, k, nowMs)
			if err != nil {
				return err
			}
			checks = append(checks, c)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("retention pass", err)
	}
	return checks, nil
}

// retentionCheck checks one partition and moves its log start.
func retentionCheck(ctx context.Context, tx *sql.Tx, topicID int64, st metadata.PartitionState, r metadata.Retention,
	k metadata.RetentionKnown, nowMs int64) (metadata.RetentionCheck, error) {
	c := metadata.RetentionCheck{State: st, KeptBytes: -1}
	var from int64
	if err := tx.QueryRowContext(ctx, retentionFromSQL, topicID, st.Partition, st.LogStartOffset).Scan(&from); err != nil {
		return c, err
	}
	args := func(more ...any) []any {
		return append([]any{topicID, st.Partition, st.LogStartOffset, st.HighWatermark}, more...)
	}
	var cursor, cut, estimate int64
	if r.Ms >= 0 {
		var first, at sql.NullInt64
		err := tx.QueryRowContext(ctx, retentionYoungSQL, args(nowMs-r.Ms, metadata.RetentionScan, from)...).Scan(&first, &at)
		if err != nil && err != sql.ErrNoRows {
			return c, err
		}
		var (
			last sql.NullInt64
			n    int64
		)
		if !first.Valid {
			if err := tx.QueryRowContext(ctx, retentionWindowSQL, args(nil, metadata.RetentionScan, from)...).Scan(&last, &n); err != nil {
				return c, err
			}
		}
		cursor = metadata.TimeRetentionCursor(nullPtr(first), nullPtr(last), n, metadata.RetentionScan, st.HighWatermark)
		c.Cut, c.YoungMs = !first.Valid && n >= metadata.RetentionScan, at.Int64
	}
	if r.Bytes >= 0 {
		known, since := int64(0), from
		if k.HighWatermark >= 0 {
			known, since = k.Bytes, k.HighWatermark
		}
		var added int64
		if err := tx.QueryRowContext(ctx, retentionAddedSQL, args(since)...).Scan(&added); err != nil {
			return c, err
		}
		c.KeptBytes = known + added
		estimate = c.KeptBytes
		if metadata.NeedsSizeCut(known, added, r.Bytes) {
			var kept int64
			err := tx.QueryRowContext(ctx, retentionCutSQL, args(r.Bytes)...).Scan(&cut, &kept)
			switch {
			case err == sql.ErrNoRows: // none exceeds: the count made exact
				if err := tx.QueryRowContext(ctx, retentionAddedSQL, args(from)...).Scan(&c.KeptBytes); err != nil {
					return c, err
				}
			case err != nil:
				return c, err
			default:
				c.KeptBytes = kept
			}
		}
	}
	target := metadata.RetentionTarget(st, cursor, cut, r.Hold)
	if target < cut { // held back before its size cut: the log start keeps more than the cut would
		c.KeptBytes = estimate
	}
	if target <= st.LogStartOffset {
		return c, nil
	}
	if _, err := tx.ExecContext(ctx, "UPDATE partitions SET log_start_offset = ? WHERE topic_id = ? AND partition = ?",
		target, topicID, st.Partition); err != nil {
		return c, err
	}
	c.State.LogStartOffset, c.Moved = target, true
	return c, nil
}
