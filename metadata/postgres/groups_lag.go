package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/metadata"
)

// Set-based group reads and writes for the lag scrape and group expiry: a
// constant number of statements whatever the number of groups.

// topGroupLagSQL ranks the groups by records behind and returns the
// partitions of the first $1, with the batch holding each position (an
// index probe), not the bytes behind (BatchBytes).
const topGroupLagSQL = `
WITH l AS (
  SELECT o.group_name, o.topic_id, o.partition, o.committed_offset, p.high_watermark, p.log_start_offset,
    greatest(p.high_watermark - greatest(o.committed_offset, p.log_start_offset), 0) AS behind
  FROM group_offsets o
  JOIN topics t ON t.id = o.topic_id AND t.deleted_at IS NULL
  JOIN partitions p ON p.topic_id = o.topic_id AND p.partition = o.partition),
g AS (SELECT group_name, sum(behind)::bigint AS behind FROM l GROUP BY group_name
  ORDER BY sum(behind) DESC, group_name LIMIT $1)
SELECT g.group_name, g.behind, l.topic_id, l.partition, l.committed_offset, l.high_watermark, l.log_start_offset,
  coalesce(f.append_time, 0), coalesce(f.max_timestamp, 0)
FROM g JOIN l ON l.group_name = g.group_name
LEFT JOIN LATERAL (SELECT b.append_time, b.max_timestamp FROM batches b
    WHERE b.topic_id = l.topic_id AND b.partition = l.partition
      AND b.base_offset <= greatest(l.committed_offset, l.log_start_offset)
      AND greatest(l.committed_offset, l.log_start_offset) < l.high_watermark
    ORDER BY b.base_offset DESC LIMIT 1) f ON true
ORDER BY g.behind DESC, g.group_name, l.topic_id, l.partition`

// TopGroupLag implements metadata.Store: one statement.
func (s *Store) TopGroupLag(ctx context.Context, limit int) ([]metadata.GroupLagInputs, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: top group lag limit %d", metadata.ErrInvalidGroup, limit)
	}
	rows, err := s.pool.Query(ctx, topGroupLagSQL, limit)
	if err != nil {
		return nil, s.wrap("top group lag", err)
	}
	var out []metadata.GroupLagInputs
	for rows.Next() {
		var name string
		var behind int64
		var l metadata.PartitionLagInput
		if err := rows.Scan(&name, &behind, &l.TopicID, &l.Partition, &l.Committed, &l.HighWatermark, &l.LogStartOffset,
			&l.FirstUnconsumedAppendTime, &l.FirstUnconsumedMaxTimestamp); err != nil {
			rows.Close()
			return nil, s.wrap("top group lag", err)
		}
		if n := len(out); n == 0 || out[n-1].Group != name {
			out = append(out, metadata.GroupLagInputs{Group: name, RecordsBehind: behind})
		}
		g := &out[len(out)-1]
		g.Partitions = append(g.Partitions, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
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
	n := len(ranges)
	ts, ps := make([]int64, n), make([]int32, n)
	lf, lt, bf, bt := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range ranges {
		ts[i], ps[i], lf[i], lt[i], bf[i], bt[i] = r.TopicID, r.Partition, r.LastFrom, r.LastTo, r.BaseFrom, r.BaseTo
	}
	rows, err := s.pool.Query(ctx, `
		SELECT u.i, coalesce(x.bytes, 0)::bigint
		FROM unnest($1::bigint[], $2::integer[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
		  WITH ORDINALITY AS u(t, p, lf, lt, bf, bt, i)
		LEFT JOIN LATERAL (SELECT sum(b.byte_length) AS bytes FROM batches b
		  WHERE b.topic_id = u.t AND b.partition = u.p AND b.base_offset >= greatest(u.bf, 0)
		    AND b.base_offset < u.bt AND b.last_offset >= u.lf AND b.last_offset < u.lt) x ON true`, ts, ps, lf, lt, bf, bt)
	if err != nil {
		return nil, s.wrap("batch bytes", err)
	}
	for rows.Next() {
		var i, b int64
		if err := rows.Scan(&i, &b); err != nil {
			rows.Close()
			return nil, s.wrap("batch bytes", err)
		}
		out[i-1] = b
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap("batch bytes", err)
	}
	return out, nil
}

// ExpireGroups implements metadata.Store: one transaction of four
// statements (lock the groups not in use, load their members, decide by
// group.Expire, delete).
func (s *Store) ExpireGroups(ctx context.Context, retention time.Duration) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	var expired []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT g.name, (extract(epoch FROM g.created_at) * 1000)::bigint,
			coalesce((SELECT max(o.commit_time) FROM group_offsets o WHERE o.group_name = g.name), 0), `+nowMs+`
			FROM consumer_groups g FOR UPDATE OF g SKIP LOCKED`)
		if err != nil {
			return err
		}
		type cand struct{ created, commit int64 }
		cands := map[string]cand{}
		var names []string
		var now int64
		for rows.Next() {
			var n string
			var c cand
			if err := rows.Scan(&n, &c.created, &c.commit, &now); err != nil {
				rows.Close()
				return err
			}
			cands[n] = c
			names = append(names, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(names) == 0 {
			return err
		}
		if rows, err = tx.Query(ctx, `SELECT group_name, member_id, member_epoch, subscription, assigned, revoking, target,
			revoking_since, session_timeout_ms, last_heartbeat, joined_at
			FROM group_members WHERE group_name = ANY ($1)`, names); err != nil {
			return err
		}
		members := map[string][]*group.Member{}
		for rows.Next() {
			var n string
			m, err := scanMember(rows, &n)
			if err != nil {
				rows.Close()
				return err
			}
			members[n] = append(members[n], m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, n := range names {
			c := cands[n]
			if group.Expire(&group.Group{Name: n, Members: members[n]}, c.created, c.commit, now, retention) {
				expired = append(expired, n)
			}
		}
		if len(expired) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		b.Queue("DELETE FROM group_members WHERE group_name = ANY ($1)", expired)
		b.Queue("DELETE FROM group_offsets WHERE group_name = ANY ($1)", expired)
		b.Queue("DELETE FROM consumer_groups WHERE name = ANY ($1)", expired)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, s.wrap("expire groups", err)
	}
	return expired, nil
}
