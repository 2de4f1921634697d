package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// retentionScanSQL looks at the partitions of a topic ($1) with records,
// all of them ($7) or those of $2 (with $3 the high watermark their bytes
// were counted to, -1 for none), in one statement: per partition its
// state, the first batch appended at or after the cutoff (now - $4 ms;
// none when $4 < 0) among the first $5 from the log start, the last
// offset and count of those $5 when none is, and, when $6 >= 0, the bytes
// of its batches since the counted high watermark (from the log start
// when none). Each part reads from an index position: the first young
// batch stops the time scan, and the sum reads only new batches.
const retentionScanSQL = `
WITH k AS (SELECT * FROM unnest($2::integer[], $3::bigint[]) AS k(partition, known_hw)),
     c AS (SELECT floor(extract(epoch FROM now()) * 1000)::bigint - $4 AS cutoff)
SELECT p.partition, p.log_start_offset, p.high_watermark, y.base_offset, y.append_time, o.last, coalesce(o.n, 0), nb.bytes
  FROM partitions p
  LEFT JOIN k ON k.partition = p.partition
  CROSS JOIN c
  CROSS JOIN LATERAL (SELECT coalesce(max(b.base_offset), 0) AS lsb FROM batches b
                       WHERE b.topic_id = p.topic_id AND b.partition = p.partition AND b.base_offset <= p.log_start_offset) s
  LEFT JOIN LATERAL (
	SELECT w.base_offset, w.append_time
	  FROM (SELECT b.base_offset, b.append_time FROM batches b
	         WHERE b.topic_id = p.topic_id AND b.partition = p.partition AND b.base_offset >= s.lsb
	           AND b.last_offset >= p.log_start_offset AND b.base_offset < p.high_watermark
	         ORDER BY b.base_offset LIMIT $5) w
	 WHERE $4 >= 0 AND w.append_time >= c.cutoff
	 ORDER BY w.base_offset LIMIT 1) y ON true
  LEFT JOIN LATERAL (
	SELECT max(w.last_offset) AS last, count(*) AS n
	  FROM (SELECT b.last_offset FROM batches b
	         WHERE b.topic_id = p.topic_id AND b.partition = p.partition AND b.base_offset >= s.lsb
	           AND b.last_offset >= p.log_start_offset AND b.base_offset < p.high_watermark
	         ORDER BY b.base_offset LIMIT $5) w
	 WHERE $4 >= 0 AND y.base_offset IS NULL) o ON true
  LEFT JOIN LATERAL (
	SELECT coalesce(sum(b.byte_length), 0) AS bytes FROM batches b
	 WHERE $6 >= 0 AND b.topic_id = p.topic_id AND b.partition = p.partition
	   AND b.base_offset >= CASE WHEN k.known_hw >= 0 THEN k.known_hw ELSE s.lsb END
	   AND b.last_offset >= p.log_start_offset AND b.base_offset < p.high_watermark) nb ON true
 WHERE p.topic_id = $1 AND p.log_start_offset < p.high_watermark AND ($7 OR k.partition IS NOT NULL)
 ORDER BY p.partition`

// retentionCutSQL finds, for each partition of $2, where size retention
// puts its log start: past the newest batch that makes the bytes from the
// head exceed $3, reading backwards from the head and stopping there;
// with the bytes it keeps (all of them when none exceeds: a count made
// exact) and the high watermark it counted to.
const retentionCutSQL = `
SELECT p.partition, p.high_watermark, x.cut, coalesce(x.kept, t.total)
  FROM unnest($2::integer[]) AS u(partition)
  JOIN partitions p ON p.topic_id = $1 AND p.partition = u.partition
  LEFT JOIN LATERAL (
	SELECT y.last_offset + 1 AS cut, y.s - y.byte_length AS kept
	  FROM (SELECT b.last_offset, b.byte_length, sum(b.byte_length) OVER (ORDER BY b.base_offset DESC) AS s
	          FROM batches b
	         WHERE b.topic_id = $1 AND b.partition = u.partition AND b.last_offset >= p.log_start_offset
	           AND b.base_offset < p.high_watermark
	         ORDER BY b.base_offset DESC) y
	 WHERE y.s > $3
	 LIMIT 1) x ON true
  LEFT JOIN LATERAL (
	SELECT coalesce(sum(b.byte_length), 0) AS total FROM batches b
	 WHERE x.cut IS NULL AND b.topic_id = $1 AND b.partition = u.partition AND b.last_offset >= p.log_start_offset
	   AND b.base_offset < p.high_watermark) t ON true`

// retentionMoveSQL moves the log starts of $2 to $3, never back nor past
// the high watermark.
const retentionMoveSQL = `
UPDATE partitions p SET log_start_offset = greatest(p.log_start_offset, u.target)
  FROM unnest($2::integer[], $3::bigint[]) AS u(partition, target)
 WHERE p.topic_id = $1 AND p.partition = u.partition AND u.target <= p.high_watermark
RETURNING p.partition, p.log_start_offset, p.high_watermark`

// RetentionPass looks at the partitions in at most three statements for
// the whole topic: the scan, the size cuts of the partitions over their
// limit, the moves.
func (s *Store) RetentionPass(ctx context.Context, topicID int64, r metadata.Retention, known []metadata.RetentionKnown) ([]metadata.RetentionCheck, error) {
	r = r.Raw() // the raw files' time limit (retention.raw.ms where a table holds them)
	parts, knownHW := make([]int32, len(known)), make([]int64, len(known))
	knownBytes := make(map[int32]int64, len(known))
	for i, k := range known {
		parts[i], knownHW[i] = k.Partition, k.HighWatermark
		if k.HighWatermark >= 0 {
			knownBytes[k.Partition] = k.Bytes
		}
	}
	rows, err := s.pool.Query(ctx, retentionScanSQL, topicID, parts, knownHW, r.Ms, metadata.RetentionScan, r.Bytes, known == nil)
	if err != nil {
		return nil, s.wrap("retention pass", err)
	}
	var (
		checks  []metadata.RetentionCheck
		cursors []int64 // time cursor of each check
		cut     []int32 // partitions over their size limit
	)
	var (
		st          metadata.PartitionState
		first, at   *int64
		last, bytes *int64
		n           int64
	)
	_, err = pgx.ForEachRow(rows, []any{&st.Partition, &st.LogStartOffset, &st.HighWatermark, &first, &at, &last, &n, &bytes}, func() error {
		c := metadata.RetentionCheck{State: st, KeptBytes: -1}
		var cursor int64
		if r.Ms >= 0 {
			cursor = metadata.TimeRetentionCursor(first, last, n, metadata.RetentionScan, st.HighWatermark)
			c.Cut = first == nil && n >= metadata.RetentionScan
			if at != nil {
				c.YoungMs = *at
			}
		}
		if r.Bytes >= 0 && bytes != nil {
			c.KeptBytes = knownBytes[st.Partition] + *bytes
			if metadata.NeedsSizeCut(knownBytes[st.Partition], *bytes, r.Bytes) {
				cut = append(cut, st.Partition)
			}
		}
		checks, cursors = append(checks, c), append(cursors, cursor)
		return nil
	})
	if err != nil {
		return nil, s.wrap("retention pass", err)
	}
	if len(checks) == 0 {
		return nil, s.missingTopic(ctx, topicID)
	}
	cuts := map[int32]int64{}
	if len(cut) > 0 {
		rows, err := s.pool.Query(ctx, retentionCutSQL, topicID, cut, r.Bytes)
		if err != nil {
			return nil, s.wrap("retention pass", err)
		}
		kept := map[int32][2]int64{} // partition -> kept bytes, the high watermark they were counted to
		var (
			p        int32
			hw       int64
			at, held *int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&p, &hw, &at, &held}, func() error {
			if at != nil {
				cuts[p] = *at
			}
			if held != nil {
				kept[p] = [2]int64{*held, hw}
			}
			return nil
		}); err != nil {
			return nil, s.wrap("retention pass", err)
		}
		for i := range checks {
			p := checks[i].State.Partition
			k, ok := kept[p]
			// Held back before its size cut, the log start keeps more than
			// the cut would: the estimate stays.
			held := metadata.RetentionTarget(checks[i].State, cursors[i], cuts[p], r.Hold) < cuts[p]
			if ok && !held {
				checks[i].KeptBytes, checks[i].State.HighWatermark = k[0], k[1]
			}
		}
	}
	var moveParts []int32
	var targets []int64
	for i, c := range checks {
		target := metadata.RetentionTarget(c.State, cursors[i], cuts[c.State.Partition], r.Hold)
		if target > c.State.LogStartOffset {
			moveParts, targets = append(moveParts, c.State.Partition), append(targets, target)
		}
	}
	if len(moveParts) == 0 {
		return checks, nil
	}
	rows, err = s.pool.Query(ctx, retentionMoveSQL, topicID, moveParts, targets)
	if err != nil {
		return nil, s.wrap("retention pass", err)
	}
	moved := map[int32]metadata.PartitionState{}
	var ns metadata.PartitionState
	if _, err := pgx.ForEachRow(rows, []any{&ns.Partition, &ns.LogStartOffset, &ns.HighWatermark}, func() error {
		moved[ns.Partition] = ns
		return nil
	}); err != nil {
		return nil, s.wrap("retention pass", err)
	}
	for i := range checks {
		if ns, ok := moved[checks[i].State.Partition]; ok {
			checks[i].State.LogStartOffset, checks[i].Moved = ns.LogStartOffset, true
		}
	}
	return checks, nil
}

// missingTopic is nil for a live topic (it has no partition to look at),
// else ErrTopicNotFound.
func (s *Store) missingTopic(ctx context.Context, topicID int64) error {
	var live bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = $1 AND deleted_at IS NULL)", topicID).Scan(&live); err != nil {
		return s.wrap("retention pass", err)
	}
	if !live {
		return fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
	}
	return nil
}
