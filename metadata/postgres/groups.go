package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/metadata"
)

// Consumer groups. A heartbeat of a stable member (nothing to change but
// its last heartbeat) is one UPDATE: heartbeatFast. Anything else runs in
// one transaction that locks the group row and its members (FOR UPDATE),
// runs group.Heartbeat in Go and writes back what changed (heartbeatSlow).
// Fast and slow paths never deadlock: the fast path locks one member row
// only; slow paths lock the group row first.

// nowMs is PostgreSQL's clock in unix ms.
const nowMs = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// heartbeatFastSQL updates the member's last heartbeat when nothing else
// would change: the member is at the group epoch with nothing to release
// or receive, its subscription is unchanged, the subscribed topics are as
// when the target was computed, and no other member is due to be fenced.
const heartbeatFastSQL = `
UPDATE group_members m SET last_heartbeat = c.now, session_timeout_ms = $4
FROM consumer_groups g, (SELECT ` + nowMs + ` AS now) c
WHERE m.group_name = $1 AND m.member_id = $2 AND m.member_epoch = $3
  AND g.name = $1 AND g.group_epoch = m.member_epoch
  AND m.revoking = '' AND m.assigned = m.target
  AND ($5::text IS NULL OR m.subscription = $5)
  AND coalesce((SELECT string_agg(t.id || ':' || t.partitions, ',' ORDER BY t.id) FROM topics t
       WHERE t.deleted_at IS NULL AND t.name = ANY (string_to_array(g.topic_names, ','))), '') = g.topics_sig
  AND NOT EXISTS (SELECT 1 FROM group_members o WHERE o.group_name = $1 AND o.member_id <> $2
       AND (o.last_heartbeat + o.session_timeout_ms < c.now
            OR (o.revoking_since > 0 AND o.revoking_since + o.session_timeout_ms < c.now)))
RETURNING m.assigned, g.group_epoch`

// Heartbeat implements metadata.Store.
func (s *Store) Heartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	if err := group.Validate(req); err != nil {
		return metadata.HeartbeatResponse{}, err
	}
	timeout := req.SessionTimeout.Milliseconds()
	if timeout <= 0 {
		timeout = metadata.DefaultSessionTimeout.Milliseconds()
	}
	if req.MemberEpoch > 0 {
		var sub *string
		if req.Subscription != nil {
			j := strings.Join(group.Canonical(req.Subscription), ",")
			sub = &j
		}
		var assigned string
		var epoch int32
		err := s.pool.QueryRow(ctx, heartbeatFastSQL, req.Group, req.MemberID, req.MemberEpoch, timeout, sub).Scan(&assigned, &epoch)
		switch {
		case err == nil:
			tps, err := group.DecodeTPs(assigned)
			if err != nil {
				return metadata.HeartbeatResponse{}, s.wrap("heartbeat "+req.Group, err)
			}
			return metadata.HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: epoch, GroupEpoch: epoch,
				Assigned: tps, HeartbeatInterval: group.HeartbeatInterval(timeout)}, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return metadata.HeartbeatResponse{}, s.wrap("heartbeat "+req.Group, err)
		}
	}
	resp, err := s.heartbeatSlow(ctx, req)
	if err != nil {
		return metadata.HeartbeatResponse{}, s.wrap("heartbeat "+req.Group, err)
	}
	return resp, nil
}

func (s *Store) heartbeatSlow(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	var resp metadata.HeartbeatResponse
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if req.MemberEpoch == metadata.JoinEpoch {
			if _, err := tx.Exec(ctx, "INSERT INTO consumer_groups (name) VALUES ($1) ON CONFLICT DO NOTHING", req.Group); err != nil {
				return err
			}
		}
		g, now, err := loadGroup(ctx, tx, req.Group, true)
		if err != nil {
			return err
		}
		if g == nil {
			if req.MemberEpoch == metadata.LeaveEpoch {
				resp = metadata.HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: metadata.LeaveEpoch, Assigned: []group.TP{}}
				return nil
			}
			return fmt.Errorf("%w: %q: group %q does not exist", metadata.ErrUnknownMember, req.MemberID, req.Group)
		}
		var names []string
		for _, m := range g.Members {
			names = append(names, m.Subscription...)
		}
		topics, err := liveTopics(ctx, tx, group.Canonical(append(names, req.Subscription...)))
		if err != nil {
			return err
		}
		out, err := group.Heartbeat(g, req, topics, now, newMemberID)
		if err != nil {
			return err
		}
		resp = out.Response
		return writeHeartbeat(ctx, tx, g, out)
	})
	return resp, err
}

// loadGroup reads a group and its members (locking them when lock) and
// the clock, in one round trip; nil when the group does not exist.
func loadGroup(ctx context.Context, tx pgx.Tx, name string, lock bool) (*group.Group, int64, error) {
	suffix := ""
	if lock {
		suffix = " FOR UPDATE"
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT group_epoch, topic_names, topics_sig, rebalance_at, rebalance_ms, `+nowMs+`
		FROM consumer_groups WHERE name = $1`+suffix, name)
	b.Queue(`SELECT member_id, member_epoch, subscription, assigned, revoking, target,
		revoking_since, session_timeout_ms, last_heartbeat, joined_at
		FROM group_members WHERE group_name = $1 ORDER BY member_id`+suffix, name)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	g := &group.Group{Name: name}
	var names string
	var now int64
	err := br.QueryRow().Scan(&g.Epoch, &names, &g.TopicsSig, &g.RebalanceAt, &g.RebalanceMs, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, br.Close()
	}
	if err != nil {
		return nil, 0, err
	}
	g.TopicNames = splitNames(names)
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		m := &group.Member{}
		var sub, as, rv, tg string
		if err := rows.Scan(&m.ID, &m.Epoch, &sub, &as, &rv, &tg, &m.RevokingSince, &m.SessionTimeoutMs,
			&m.LastHeartbeat, &m.JoinedAt); err != nil {
			rows.Close()
			return nil, 0, err
		}
		m.Subscription = splitNames(sub)
		if m.Assigned, err = group.DecodeTPs(as); err == nil {
			if m.Revoking, err = group.DecodeTPs(rv); err == nil {
				m.Target, err = group.DecodeTPs(tg)
			}
		}
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		g.Members = append(g.Members, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return g, now, br.Close()
}

func splitNames(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// liveTopics returns the live topics among names, by name.
func liveTopics(ctx context.Context, tx pgx.Tx, names []string) (map[string]group.Topic, error) {
	rows, err := tx.Query(ctx, "SELECT id, name, partitions FROM topics WHERE deleted_at IS NULL AND name = ANY ($1)", names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]group.Topic{}
	for rows.Next() {
		var t group.Topic
		if err := rows.Scan(&t.ID, &t.Name, &t.Partitions); err != nil {
			return nil, err
		}
		out[t.Name] = t
	}
	return out, rows.Err()
}

// writeHeartbeat writes what a heartbeat changed in one round trip.
func writeHeartbeat(ctx context.Context, tx pgx.Tx, g *group.Group, out group.Outcome) error {
	b := &pgx.Batch{}
	if out.GroupChanged {
		b.Queue(`UPDATE consumer_groups SET group_epoch = $2, topic_names = $3, topics_sig = $4,
			rebalance_at = $5, rebalance_ms = $6 WHERE name = $1`, g.Name, g.Epoch, strings.Join(g.TopicNames, ","),
			g.TopicsSig, g.RebalanceAt, g.RebalanceMs)
	}
	if len(out.Deleted) > 0 {
		b.Queue("DELETE FROM group_members WHERE group_name = $1 AND member_id = ANY ($2)", g.Name, out.Deleted)
	}
	for _, m := range out.Upsert {
		b.Queue(`INSERT INTO group_members (group_name, member_id, member_epoch, subscription, assigned, revoking,
			target, revoking_since, session_timeout_ms, last_heartbeat, joined_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (group_name, member_id) DO UPDATE SET member_epoch = excluded.member_epoch,
			subscription = excluded.subscription, assigned = excluded.assigned, revoking = excluded.revoking,
			target = excluded.target, revoking_since = excluded.revoking_since,
			session_timeout_ms = excluded.session_timeout_ms, last_heartbeat = excluded.last_heartbeat,
			joined_at = excluded.joined_at`, g.Name, m.ID, m.Epoch, strings.Join(m.Subscription, ","),
			group.EncodeTPs(m.Assigned), group.EncodeTPs(m.Revoking), group.EncodeTPs(m.Target), m.RevokingSince,
			m.SessionTimeoutMs, m.LastHeartbeat, m.JoinedAt)
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// commitOffsetsSQL checks and commits positions in one statement. It
// returns the member's epoch (NULL when not a member), how many partitions
// the member does not own, how many do not exist, the live members, and
// how many positions were written (all or none).
const commitOffsetsSQL = `
WITH m AS (
  SELECT member_epoch, ',' || assigned || ',' || revoking || ',' AS owns
  FROM group_members WHERE group_name = $1 AND member_id = $2 FOR SHARE),
c AS (SELECT ` + nowMs + ` AS now),
u AS (SELECT * FROM unnest($4::bigint[], $5::integer[], $6::bigint[], $7::text[]) AS u(t, p, o, md)),
chk AS (SELECT
  (SELECT member_epoch FROM m) AS epoch,
  (SELECT count(*) FROM u WHERE position(',' || u.t || ':' || u.p || ',' IN coalesce((SELECT owns FROM m), '')) = 0) AS not_owned,
  (SELECT count(*) FROM u WHERE NOT EXISTS (SELECT 1 FROM partitions pt JOIN topics tp ON tp.id = pt.topic_id
     AND tp.deleted_at IS NULL WHERE pt.topic_id = u.t AND pt.partition = u.p)) AS missing,
  (SELECT count(*) FROM group_members gm, c WHERE gm.group_name = $1
     AND gm.last_heartbeat + gm.session_timeout_ms >= c.now) AS live),
ok AS (SELECT 1 FROM chk WHERE missing = 0
  AND CASE WHEN $2 = '' THEN live = 0 ELSE epoch IS NOT DISTINCT FROM $3 AND not_owned = 0 END),
g AS (INSERT INTO consumer_groups (name) SELECT $1 FROM ok ON CONFLICT DO NOTHING),
ins AS (INSERT INTO group_offsets (group_name, topic_id, partition, committed_offset, metadata, commit_time)
  SELECT $1, u.t, u.p, u.o, u.md, c.now FROM u, c, ok
  ON CONFLICT (group_name, topic_id, partition) DO UPDATE SET committed_offset = excluded.committed_offset,
    metadata = excluded.metadata, commit_time = excluded.commit_time
  RETURNING 1)
SELECT epoch, not_owned, missing, live, (SELECT count(*) FROM ins) FROM chk`

// CommitOffsets implements metadata.Store: one statement.
func (s *Store) CommitOffsets(ctx context.Context, req metadata.CommitOffsetsRequest) error {
	if err := group.ValidateCommit(req); err != nil {
		return err
	}
	n := len(req.Offsets)
	ts, ps, os, mds := make([]int64, n), make([]int32, n), make([]int64, n), make([]string, n)
	for i, o := range req.Offsets {
		ts[i], ps[i], os[i], mds[i] = o.TopicID, o.Partition, o.Offset, o.Metadata
	}
	var epoch *int32
	var notOwned, missing, live, written int64
	if err := s.pool.QueryRow(ctx, commitOffsetsSQL, req.Group, req.MemberID, req.MemberEpoch, ts, ps, os, mds).
		Scan(&epoch, &notOwned, &missing, &live, &written); err != nil {
		return s.wrap("commit offsets "+req.Group, err)
	}
	switch {
	case req.MemberID != "" && epoch == nil:
		return fmt.Errorf("%w: %q in group %q", metadata.ErrUnknownMember, req.MemberID, req.Group)
	case req.MemberID != "" && *epoch != req.MemberEpoch:
		return fmt.Errorf("%w: member %q has epoch %d, not %d", metadata.ErrStaleMemberEpoch, req.MemberID, *epoch, req.MemberEpoch)
	case req.MemberID != "" && notOwned > 0:
		return fmt.Errorf("%w: %q does not own %d of the partitions", metadata.ErrNotPartitionOwner, req.MemberID, notOwned)
	case req.MemberID == "" && live > 0:
		return fmt.Errorf("%w: %d in group %q: commit with a member id", metadata.ErrGroupNotEmpty, live, req.Group)
	case missing > 0:
		for _, o := range req.Offsets {
			if _, err := s.partitionState(ctx, o.TopicID, o.Partition); err != nil {
				return err
			}
		}
		return fmt.Errorf("metadata: commit offsets %s: %d partitions missing", req.Group, missing)
	case written != int64(n):
		return fmt.Errorf("metadata: commit offsets %s: %d of %d written", req.Group, written, n)
	}
	return nil
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

// ListGroups implements metadata.Store.
func (s *Store) ListGroups(ctx context.Context) ([]metadata.GroupListing, error) {
	var out []metadata.GroupListing
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT name FROM consumer_groups ORDER BY name")
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, n := range names {
			g, now, err := loadGroup(ctx, tx, n, false)
			if err != nil || g == nil {
				return err
			}
			live := group.LiveOnly(g, now)
			out = append(out, metadata.GroupListing{Group: n, State: live.State(), Members: len(live.Members)})
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("list groups", err)
	}
	return out, nil
}

// DescribeGroup implements metadata.Store.
func (s *Store) DescribeGroup(ctx context.Context, name string) (metadata.GroupDescription, error) {
	if err := group.ValidateName("group", name); err != nil {
		return metadata.GroupDescription{}, err
	}
	var d metadata.GroupDescription
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		g, now, err := loadGroup(ctx, tx, name, false)
		if err != nil {
			return err
		}
		if g == nil {
			return fmt.Errorf("%w: %q", metadata.ErrGroupNotFound, name)
		}
		offsets, err := readOffsets(ctx, tx, name)
		if err != nil {
			return err
		}
		d = group.Describe(g, offsets, now)
		return nil
	})
	if err != nil {
		return metadata.GroupDescription{}, s.wrap("describe group "+name, err)
	}
	return d, nil
}

// liveMembers counts the group's members whose session has not expired.
func liveMembers(ctx context.Context, tx pgx.Tx, name string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM group_members WHERE group_name = $1
		AND last_heartbeat + session_timeout_ms >= `+nowMs, name).Scan(&n)
	return n, err
}

// DeleteGroup implements metadata.Store.
func (s *Store) DeleteGroup(ctx context.Context, name string) error {
	if err := group.ValidateName("group", name); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT true FROM consumer_groups WHERE name = $1 FOR UPDATE", name).Scan(&exists); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: %q", metadata.ErrGroupNotFound, name)
			}
			return err
		}
		n, err := liveMembers(ctx, tx, name)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: %d in group %q", metadata.ErrGroupNotEmpty, n, name)
		}
		b := &pgx.Batch{}
		b.Queue("DELETE FROM group_members WHERE group_name = $1", name)
		b.Queue("DELETE FROM group_offsets WHERE group_name = $1", name)
		b.Queue("DELETE FROM consumer_groups WHERE name = $1", name)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return s.wrap("delete group "+name, err)
	}
	return nil
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
		// The group row serialises resets with heartbeats and deletes.
		if _, err := tx.Exec(ctx, "INSERT INTO consumer_groups (name) VALUES ($1) ON CONFLICT DO NOTHING", req.Group); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM consumer_groups WHERE name = $1 FOR UPDATE", req.Group); err != nil {
			return err
		}
		if !req.Force {
			n, err := liveMembers(ctx, tx, req.Group)
			if err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%w: %d in group %q: reset needs force", metadata.ErrGroupNotEmpty, n, req.Group)
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
			return errDryRun // roll back the group row a dry run may have created
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
		if _, err := tx.Exec(ctx, "SELECT 1 FROM consumer_groups WHERE name = $1 FOR UPDATE", to); err != nil {
			return err
		}
		live, err := liveMembers(ctx, tx, to)
		if err != nil {
			return err
		}
		if live > 0 {
			return fmt.Errorf("%w: %d in group %q", metadata.ErrGroupNotEmpty, live, to)
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
