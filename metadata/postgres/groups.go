package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

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
		topics, err := liveTopics(ctx, tx, group.Canonical(append(subscribed(g), req.Subscription...)))
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
		m, err := scanMember(rows, nil)
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

// ListGroups implements metadata.Store: two statements whatever the
// number of groups (the groups, then every member), liveness by
// group.LiveOnly.
func (s *Store) ListGroups(ctx context.Context) ([]metadata.GroupListing, error) {
	var out []metadata.GroupListing
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		gs, now, err := loadGroups(ctx, tx)
		if err != nil {
			return err
		}
		out = make([]metadata.GroupListing, 0, len(gs))
		for _, g := range gs {
			live := group.LiveOnly(g, now)
			out = append(out, metadata.GroupListing{Group: g.Name, State: live.State(), Members: len(live.Members),
				LastRebalanceDuration: g.RebalanceDuration()})
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("list groups", err)
	}
	return out, nil
}

// loadGroups reads every group and its members, by name, and the clock,
// in one round trip.
func loadGroups(ctx context.Context, tx pgx.Tx) ([]*group.Group, int64, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT name, group_epoch, topic_names, topics_sig, rebalance_at, rebalance_ms, ` + nowMs + `
		FROM consumer_groups ORDER BY name`)
	b.Queue(`SELECT group_name, member_id, member_epoch, subscription, assigned, revoking, target,
		revoking_since, session_timeout_ms, last_heartbeat, joined_at
		FROM group_members ORDER BY group_name, member_id`)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	var now int64
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	var gs []*group.Group
	byName := map[string]*group.Group{}
	for rows.Next() {
		g := &group.Group{}
		var names string
		if err := rows.Scan(&g.Name, &g.Epoch, &names, &g.TopicsSig, &g.RebalanceAt, &g.RebalanceMs, &now); err != nil {
			rows.Close()
			return nil, 0, err
		}
		g.TopicNames = splitNames(names)
		gs = append(gs, g)
		byName[g.Name] = g
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if rows, err = br.Query(); err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var name string
		m, err := scanMember(rows, &name)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		if g := byName[name]; g != nil {
			g.Members = append(g.Members, m)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return gs, now, br.Close()
}

// scanMember scans a member row; with groupName non-nil the row starts
// with the member's group name.
func scanMember(rows pgx.Rows, groupName *string) (*group.Member, error) {
	m := &group.Member{}
	var sub, as, rv, tg string
	dest := []any{&m.ID, &m.Epoch, &sub, &as, &rv, &tg, &m.RevokingSince, &m.SessionTimeoutMs, &m.LastHeartbeat, &m.JoinedAt}
	if groupName != nil {
		dest = append([]any{groupName}, dest...)
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	m.Subscription = splitNames(sub)
	var err error
	if m.Assigned, err = group.DecodeTPs(as); err == nil {
		if m.Revoking, err = group.DecodeTPs(rv); err == nil {
			m.Target, err = group.DecodeTPs(tg)
		}
	}
	return m, err
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

// loadFenced loads and locks the group (nil when it does not exist) and
// fences the members that expired (group.Fence), writing what that
// changed: every write that decides on liveness starts here, so that a
// member it treats as gone cannot come back with its old epoch afterwards.
func loadFenced(ctx context.Context, tx pgx.Tx, name string) (*group.Group, int64, error) {
	g, now, err := loadGroup(ctx, tx, name, true)
	if err != nil || !group.AnyExpired(g, now) {
		return g, now, err
	}
	topics, err := liveTopics(ctx, tx, subscribed(g))
	if err != nil {
		return nil, 0, err
	}
	return g, now, writeHeartbeat(ctx, tx, g, group.Fence(g, topics, now))
}

// subscribed is the union of g's members' subscriptions.
func subscribed(g *group.Group) []string {
	var names []string
	for _, m := range g.Members {
		names = append(names, m.Subscription...)
	}
	return group.Canonical(names)
}

// DeleteGroup implements metadata.Store.
func (s *Store) DeleteGroup(ctx context.Context, name string) error {
	if err := group.ValidateName("group", name); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := requireEmptyGroup(ctx, tx, name, "wait for its members to leave or expire"); err != nil {
			return err
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

// DeleteOffsets implements metadata.Store.
func (s *Store) DeleteOffsets(ctx context.Context, name string, partitions []metadata.TopicPartition) error {
	if err := group.ValidateName("group", name); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := requireEmptyGroup(ctx, tx, name, "positions are deleted only while no member consumes"); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, tp := range partitions {
			b.Queue("DELETE FROM group_offsets WHERE group_name = $1 AND topic_id = $2 AND partition = $3", name, tp.TopicID, tp.Partition)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return s.wrap("delete offsets of group "+name, err)
	}
	return nil
}

// requireEmptyGroup fails unless group name exists without live members
// (its row locked for the transaction).
func requireEmptyGroup(ctx context.Context, tx pgx.Tx, name, what string) error {
	g, now, err := loadGroup(ctx, tx, name, true)
	if err != nil {
		return err
	}
	if g == nil {
		return fmt.Errorf("%w: %q", metadata.ErrGroupNotFound, name)
	}
	return group.RequireEmpty(g, now, what)
}
