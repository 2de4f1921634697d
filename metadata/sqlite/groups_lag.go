package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/metadata"
)

// Set-based group reads and writes for the lag scrape and group expiry: a
// constant number of statements whatever the number of groups.

const topGroupLagSQL = `
WITH l AS (
  SELECT o.group_name, o.topic_id, o.partition, o.committed_offset, p.high_watermark, p.log_start_offset,
    MAX(p.high_watermark - MAX(o.committed_offset, p.log_start_offset), 0) AS behind,
    MAX(o.committed_offset, p.log_start_offset) AS pos
  FROM group_offsets o
  JOIN topics t ON t.id = o.topic_id AND t.deleted_at IS NULL
  JOIN partitions p ON p.topic_id = o.topic_id AND p.partition = o.partition),
g AS (SELECT group_name, SUM(behind) AS behind FROM l GROUP BY group_name ORDER BY SUM(behind) DESC, group_name LIMIT ?)
SELECT g.group_name, g.behind, l.topic_id, l.partition, l.committed_offset, l.high_watermark, l.log_start_offset,
  COALESCE(f.append_time, 0), COALESCE(f.max_timestamp, 0)
FROM g JOIN l ON l.group_name = g.group_name
LEFT JOIN batches f ON f.topic_id = l.topic_id AND f.partition = l.partition AND l.pos < l.high_watermark
  AND f.base_offset = (SELECT b.base_offset FROM batches b WHERE b.topic_id = l.topic_id AND b.partition = l.partition
    AND b.base_offset <= l.pos ORDER BY b.base_offset DESC LIMIT 1)
ORDER BY g.behind DESC, g.group_name, l.topic_id, l.partition`

// TopGroupLag implements metadata.Store: one statement.
func (s *Store) TopGroupLag(ctx context.Context, limit int) ([]metadata.GroupLagInputs, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: top group lag limit %d", metadata.ErrInvalidGroup, limit)
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []metadata.GroupLagInputs
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, topGroupLagSQL, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var behind int64
			var l metadata.PartitionLagInput
			if err := rows.Scan(&name, &behind, &l.TopicID, &l.Partition, &l.Committed, &l.HighWatermark, &l.LogStartOffset,
				&l.FirstUnconsumedAppendTime, &l.FirstUnconsumedMaxTimestamp); err != nil {
				return err
			}
			if n := len(out); n == 0 || out[n-1].Group != name {
				out = append(out, metadata.GroupLagInputs{Group: name, RecordsBehind: behind})
			}
			g := &out[len(out)-1]
			g.Partitions = append(g.Partitions, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("top group lag", err)
	}
	return out, nil
}

// BatchBytes implements metadata.Store: one statement.
func (s *Store) BatchBytes(ctx context.Context, ranges []metadata.BatchRange) ([]int64, error) {
	out := make([]int64, len(ranges))
	if len(ranges) == 0 {
		return out, nil
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	type rng struct {
		T      int64 `json:"t"`
		P      int32 `json:"p"`
		LF, LT int64
		BF, BT int64
	}
	rs := make([]rng, len(ranges))
	for i, r := range ranges {
		rs[i] = rng{r.TopicID, r.Partition, r.LastFrom, r.LastTo, r.BaseFrom, r.BaseTo}
	}
	js, err := json.Marshal(rs)
	if err != nil {
		return nil, err
	}
	err = s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `
			SELECT u.key, COALESCE((SELECT SUM(b.byte_length) FROM batches b
			  WHERE b.topic_id = json_extract(u.value, '$.t') AND b.partition = json_extract(u.value, '$.p')
			    AND b.base_offset >= json_extract(u.value, '$.BF') AND b.base_offset < json_extract(u.value, '$.BT')
			    AND b.last_offset >= json_extract(u.value, '$.LF') AND b.last_offset < json_extract(u.value, '$.LT')), 0)
			FROM json_each(?) u`, string(js))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var i, b int64
			if err := rows.Scan(&i, &b); err != nil {
				return err
			}
			out[i] = b
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("batch bytes", err)
	}
	return out, nil
}

// ExpireGroups implements metadata.Store: one transaction (SQLite has one
// writer: nothing to skip).
func (s *Store) ExpireGroups(ctx context.Context, retention time.Duration) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var expired []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		rows, err := tx.QueryContext(ctx, `SELECT g.name, g.created_at,
			COALESCE((SELECT MAX(o.commit_time) FROM group_offsets o WHERE o.group_name = g.name), 0)
			FROM consumer_groups g ORDER BY g.name`)
		if err != nil {
			return err
		}
		type cand struct {
			name            string
			created, commit int64
		}
		var cands []cand
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.name, &c.created, &c.commit); err != nil {
				rows.Close()
				return err
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range cands {
			g, err := loadGroup(ctx, tx, c.name)
			if err != nil || g == nil {
				return err
			}
			if group.Expire(g, c.created, c.commit, now, retention) {
				expired = append(expired, c.name)
			}
		}
		for _, n := range expired {
			for _, q := range []string{"DELETE FROM group_members WHERE group_name = ?",
				"DELETE FROM group_offsets WHERE group_name = ?", "DELETE FROM consumer_groups WHERE name = ?"} {
				if _, err := tx.ExecContext(ctx, q, n); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("expire groups", err)
	}
	return expired, nil
}
