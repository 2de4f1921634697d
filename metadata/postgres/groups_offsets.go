package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/metadata"
)

// Committed positions of consumer groups: commit, fetch, reset, copy and
// the inputs of lag. Writes that decide on liveness load the group in their
// transaction and apply package group's rule (loadFenced, CheckCommit,
// RequireEmpty).

// commitFastSQL commits positions in one statement when package group's
// rule surely accepts them and nothing is to be fenced: no member of the
// group expired (the test of Member.Expired, in SQL), the member exists at
// the epoch given and owns every partition (or, without a member id, the
// group has no members), and every partition exists. It returns how many
// positions it wrote: all or none. Anything else goes to commitSlow, which
// decides by group.CheckCommit; TestCommitFastPathHeldToRule holds this
// statement to that rule on generated cases.
const commitFastSQL = `
WITH c AS (SELECT ` + nowMs + ` AS now),
m AS (SELECT member_epoch, ',' || assigned || ',' || revoking || ',' AS owns
  FROM group_members WHERE group_name = $1 AND member_id = $2 FOR SHARE),
u AS (SELECT * FROM unnest($4::bigint[], $5::integer[], $6::bigint[], $7::text[]) AS u(t, p, o, md)),
chk AS (SELECT
  (SELECT member_epoch FROM m) AS epoch,
  (SELECT count(*) FROM u WHERE position(',' || u.t || ':' || u.p || ',' IN coalesce((SELECT owns FROM m), '')) = 0) AS not_owned,
  (SELECT count(*) FROM u WHERE NOT EXISTS (SELECT 1 FROM partitions pt JOIN topics tp ON tp.id = pt.topic_id
     AND tp.deleted_at IS NULL WHERE pt.topic_id = u.t AND pt.partition = u.p)) AS missing,
  (SELECT count(*) FROM group_members gm WHERE gm.group_name = $1) AS members,
  (SELECT count(*) FROM group_members gm, c WHERE gm.group_name = $1
     AND (gm.last_heartbeat + gm.session_timeout_ms < c.now
          OR (gm.revoking_since > 0 AND gm.revoking_since + gm.session_timeout_ms < c.now))) AS expired),
ok AS (SELECT 1 FROM chk WHERE missing = 0 AND expired = 0
  AND CASE WHEN $2 = '' THEN members = 0 ELSE epoch IS NOT DISTINCT FROM $3 AND not_owned = 0 END),
g AS (INSERT INTO consumer_groups (name) SELECT $1 FROM ok ON CONFLICT DO NOTHING),
ins AS (INSERT INTO group_offsets (group_name, topic_id, partition, committed_offset, metadata, commit_time)
  SELECT $1, u.t, u.p, u.o, u.md, c.now FROM u, c, ok
  ON CONFLICT (group_name, topic_id, partition) DO UPDATE SET committed_offset = excluded.committed_offset,
    metadata = excluded.metadata, commit_time = excluded.commit_time
  RETURNING 1)
SELECT count(*) FROM ins`

// commitArgs are a request's positions as the statements' arrays.
func commitArgs(req metadata.CommitOffsetsRequest) (ts []int64, ps []int32, os []int64, mds []string) {
	n := len(req.Offsets)
	ts, ps, os, mds = make([]int64, n), make([]int32, n), make([]int64, n), make([]string, n)
	for i, o := range req.Offsets {
		ts[i], ps[i], os[i], mds[i] = o.TopicID, o.Partition, o.Offset, o.Metadata
	}
	return ts, ps, os, mds
}

// CommitOffsets implements metadata.Store: one statement when the fast
// path applies (commitFastSQL), else one transaction that locks the group,
// fences expired members, decides by group.CheckCommit and writes every
// position or none.
func (s *Store) CommitOffsets(ctx context.Context, req metadata.CommitOffsetsRequest) error {
	if err := group.ValidateCommit(req); err != nil {
		return err
	}
	ts, ps, os, mds := commitArgs(req)
	var written int64
	if err := s.pool.QueryRow(ctx, commitFastSQL, req.Group, req.MemberID, req.MemberEpoch, ts, ps, os, mds).Scan(&written); err != nil {
		return s.wrap("commit offsets "+req.Group, err)
	}
	if written == int64(len(req.Offsets)) {
		return nil
	}
	if err := s.commitSlow(ctx, req); err != nil {
		return s.wrap("commit offsets "+req.Group, err)
	}
	return nil
}

// commitSlow is CommitOffsets decided in Go.
func (s *Store) commitSlow(ctx context.Context, req metadata.CommitOffsetsRequest) error {
	ts, ps, os, mds := commitArgs(req)
	n := len(req.Offsets)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		g, now, err := loadFenced(ctx, tx, req.Group)
		if err != nil {
			return err
		}
		if err := group.CheckCommit(g, req, now); err != nil {
			return err
		}
		if g == nil {
			if _, err := tx.Exec(ctx, "INSERT INTO consumer_groups (name) VALUES ($1) ON CONFLICT DO NOTHING", req.Group); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO group_offsets (group_name, topic_id, partition, committed_offset, metadata, commit_time)
			SELECT $1, u.t, u.p, u.o, u.md, $6 FROM unnest($2::bigint[], $3::integer[], $4::bigint[], $5::text[]) AS u(t, p, o, md)
			WHERE EXISTS (SELECT 1 FROM partitions pt JOIN topics tp ON tp.id = pt.topic_id AND tp.deleted_at IS NULL
			  WHERE pt.topic_id = u.t AND pt.partition = u.p)
			ON CONFLICT (group_name, topic_id, partition) DO UPDATE SET committed_offset = excluded.committed_offset,
			  metadata = excluded.metadata, commit_time = excluded.commit_time`, req.Group, ts, ps, os, mds, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == int64(n) {
			return nil
		}
		for _, o := range req.Offsets { // all or none: say which partition is missing
			if _, err := txPartitionState(ctx, tx, group.TP{TopicID: o.TopicID, Partition: o.Partition}); err != nil {
				return err
			}
		}
		return fmt.Errorf("metadata: commit offsets %s: %d of %d written", req.Group, tag.RowsAffected(), n)
	})
}

func readOffsets(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, name string) ([]metadata.CommittedOffset, error) {
	rows, err := q.Query(ctx, `SELECT topic_id, partition, committed_offset, metadata, commit_time
		FROM group_offsets WHERE group_name = $1 ORDER BY topic_id, partition`, name)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.CommittedOffset, error) {
		var o metadata.CommittedOffset
		var at int64
		err := r.Scan(&o.TopicID, &o.Partition, &o.Offset, &o.Metadata, &at)
		o.CommitTime = time.UnixMilli(at).UTC()
		return o, err
	})
	if out == nil {
		out = []metadata.CommittedOffset{}
	}
	return out, err
}

// FetchOffsets implements metadata.Store.
func (s *Store) FetchOffsets(ctx context.Context, name string, partitions []metadata.TopicPartition) ([]metadata.CommittedOffset, error) {
	if err := group.ValidateName("group", name); err != nil {
		return nil, err
	}
	out, err := readOffsets(ctx, s.pool, name)
	if err != nil {
		return nil, s.wrap("fetch offsets "+name, err)
	}
	if partitions != nil {
		want := make(map[group.TP]bool, len(partitions))
		for _, p := range partitions {
			want[p] = true
		}
		kept := out[:0]
		for _, o := range out {
			if want[group.TP{TopicID: o.TopicID, Partition: o.Partition}] {
				kept = append(kept, o)
			}
		}
		out = kept
	}
	return out, nil
}

// txPartitionState reads one partition's offsets inside tx.
func txPartitionState(ctx context.Context, tx pgx.Tx, p group.TP) (metadata.PartitionState, error) {
	st := metadata.PartitionState{Partition: p.Partition}
	err := tx.QueryRow(ctx, `SELECT log_start_offset, high_watermark FROM partitions p JOIN topics t
		ON t.id = p.topic_id AND t.deleted_at IS NULL WHERE p.topic_id = $1 AND p.partition = $2`,
		p.TopicID, p.Partition).Scan(&st.LogStartOffset, &st.HighWatermark)
	if !errors.Is(err, pgx.ErrNoRows) {
		return st, err
	}
	var live bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = $1 AND deleted_at IS NULL)", p.TopicID).Scan(&live); err != nil {
		return st, err
	}
	if live {
		return st, fmt.Errorf("%w: topic %d partition %d", metadata.ErrPartitionNotFound, p.TopicID, p.Partition)
	}
	return st, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, p.TopicID)
}

// ResetOffsets implements metadata.Store.
func (s *Store) ResetOffsets(ctx context.Context, req metadata.ResetOffsetsRequest) ([]metadata.OffsetReset, error) {
	if err := group.ValidateReset(req); err != nil {
		return nil, err
	}
	var plan []metadata.OffsetReset
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The group row serialises resets with heartbeats and deletes; a
		// reset never creates a group (a typo would make one).
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT true FROM consumer_groups WHERE name = $1 FOR UPDATE", req.Group).Scan(&exists); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: %q", metadata.ErrGroupNotFound, req.Group)
			}
			return err
		}
		g, now, err := loadFenced(ctx, tx, req.Group)
		if err != nil {
			return err
		}
		if !req.Force {
			if err := group.RequireEmpty(g, now, "reset with force"); err != nil {
				return err
			}
		}
		current, err := readOffsets(ctx, tx, req.Group)
		if err != nil {
			return err
		}
		prev := map[group.TP]int64{}
		for _, o := range current {
			prev[group.TP{TopicID: o.TopicID, Partition: o.Partition}] = o.Offset
		}
		targets, err := resetTargets(ctx, tx, req, current)
		if err != nil {
			return err
		}
		plan = make([]metadata.OffsetReset, 0, len(targets))
		for _, p := range targets {
			st, err := txPartitionState(ctx, tx, p)
			if err != nil {
				return err
			}
			old, ok := prev[p]
			if !ok {
				old = -1
			}
			var atTS int64
			if req.Spec == metadata.ResetTimestamp {
				err := tx.QueryRow(ctx, `SELECT base_offset FROM batches
					WHERE topic_id = $1 AND partition = $2 AND max_timestamp >= $3 AND last_offset >= $4 AND base_offset < $5
					ORDER BY base_offset LIMIT 1`, p.TopicID, p.Partition, req.Timestamp, st.LogStartOffset, st.HighWatermark).Scan(&atTS)
				if errors.Is(err, pgx.ErrNoRows) {
					atTS = st.HighWatermark
				} else if err != nil {
					return err
				}
			}
			plan = append(plan, metadata.OffsetReset{TopicID: p.TopicID, Partition: p.Partition, Previous: old,
				New: group.ResetTo(req, st, old, atTS)})
		}
		if req.DryRun {
			return errDryRun
		}
		n := len(plan)
		ts, ps, os := make([]int64, n), make([]int32, n), make([]int64, n)
		for i, r := range plan {
			ts[i], ps[i], os[i] = r.TopicID, r.Partition, r.New
		}
		_, err = tx.Exec(ctx, `INSERT INTO group_offsets (group_name, topic_id, partition, committed_offset, metadata, commit_time)
			SELECT $1, t, p, o, '', `+nowMs+` FROM unnest($2::bigint[], $3::integer[], $4::bigint[]) AS u(t, p, o)
			ON CONFLICT (group_name, topic_id, partition) DO UPDATE SET committed_offset = excluded.committed_offset,
			metadata = excluded.metadata, commit_time = excluded.commit_time`, req.Group, ts, ps, os)
		return err
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, s.wrap("reset offsets "+req.Group, err)
	}
	return plan, nil
}

// errDryRun rolls back a dry run's transaction.
var errDryRun = errors.New("dry run")

// resetTargets lists the partitions a reset covers, sorted.
func resetTargets(ctx context.Context, tx pgx.Tx, req metadata.ResetOffsetsRequest, current []metadata.CommittedOffset) ([]group.TP, error) {
	set := map[group.TP]bool{}
	for _, p := range req.Partitions {
		set[p] = true
	}
	for _, id := range req.Topics {
		rows, err := tx.Query(ctx, `SELECT p.partition FROM partitions p JOIN topics t ON t.id = p.topic_id
			AND t.deleted_at IS NULL WHERE p.topic_id = $1`, id)
		if err != nil {
			return nil, err
		}
		parts, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			return nil, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, id)
		}
		for _, p := range parts {
			set[group.TP{TopicID: id, Partition: p}] = true
		}
	}
	if len(req.Partitions) == 0 && len(req.Topics) == 0 {
		rows, err := tx.Query(ctx, `SELECT o.topic_id, o.partition FROM group_offsets o JOIN topics t
			ON t.id = o.topic_id AND t.deleted_at IS NULL WHERE o.group_name = $1`, req.Group)
		if err != nil {
			return nil, err
		}
		tps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[group.TP])
		if err != nil {
			return nil, err
		}
		for _, p := range tps {
			set[p] = true
		}
	}
	out := make([]group.TP, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	group.SortTPs(out)
	return out, nil
}

// CopyOffsets implements metadata.Store.
func (s *Store) CopyOffsets(ctx context.Context, from, to string) (int, error) {
	if err := group.ValidateName("group", from); err != nil {
		return 0, err
	}
	if err := group.ValidateName("group", to); err != nil {
		return 0, err
	}
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO consumer_groups (name) VALUES ($1) ON CONFLICT DO NOTHING", to); err != nil {
			return err
		}
		g, now, err := loadFenced(ctx, tx, to)
		if err != nil {
			return err
		}
		if err := group.RequireEmpty(g, now, "wait for its members to leave or expire"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO group_offsets (group_name, topic_id, partition, committed_offset, metadata, commit_time)
			SELECT $1, topic_id, partition, committed_offset, metadata, `+nowMs+` FROM group_offsets WHERE group_name = $2
			ON CONFLICT (group_name, topic_id, partition) DO UPDATE SET committed_offset = excluded.committed_offset,
			metadata = excluded.metadata, commit_time = excluded.commit_time`, to, from)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %q has no positions", metadata.ErrGroupNotFound, from)
		}
		n = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, s.wrap("copy offsets", err)
	}
	return n, nil
}

// GroupLag implements metadata.Store: one statement.
func (s *Store) GroupLag(ctx context.Context, name string) ([]metadata.PartitionLagInput, error) {
	if err := group.ValidateName("group", name); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT o.topic_id, o.partition, o.committed_offset, p.high_watermark, p.log_start_offset,
		  coalesce((SELECT sum(b.byte_length) FROM batches b WHERE b.topic_id = o.topic_id AND b.partition = o.partition
		    AND b.last_offset >= greatest(o.committed_offset, p.log_start_offset) AND b.base_offset < p.high_watermark), 0)::bigint,
		  coalesce(f.append_time, 0), coalesce(f.max_timestamp, 0)
		FROM group_offsets o
		JOIN topics t ON t.id = o.topic_id AND t.deleted_at IS NULL
		JOIN partitions p ON p.topic_id = o.topic_id AND p.partition = o.partition
		LEFT JOIN LATERAL (SELECT b.append_time, b.max_timestamp FROM batches b
		    WHERE b.topic_id = o.topic_id AND b.partition = o.partition
		      AND b.base_offset <= greatest(o.committed_offset, p.log_start_offset)
		      AND greatest(o.committed_offset, p.log_start_offset) < p.high_watermark
		    ORDER BY b.base_offset DESC LIMIT 1) f ON true
		WHERE o.group_name = $1 ORDER BY o.topic_id, o.partition`, name)
	if err != nil {
		return nil, s.wrap("group lag "+name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.PartitionLagInput, error) {
		var l metadata.PartitionLagInput
		err := r.Scan(&l.TopicID, &l.Partition, &l.Committed, &l.HighWatermark, &l.LogStartOffset,
			&l.BytesBehind, &l.FirstUnconsumedAppendTime, &l.FirstUnconsumedMaxTimestamp)
		return l, err
	})
	if err != nil {
		return nil, s.wrap("group lag "+name, err)
	}
	if out == nil {
		out = []metadata.PartitionLagInput{}
	}
	return out, nil
}
