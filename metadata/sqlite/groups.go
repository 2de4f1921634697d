package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/metadata"
)

// Consumer groups: every operation is one transaction; heartbeats load the
// group (a row and its members), run group.Heartbeat and write back what
// changed.
// newMemberID makes a random member id.
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loadGroup reads a group and its members; nil when it does not exist.
func loadGroup(ctx context.Context, tx *sql.Tx, name string) (*group.Group, error) {
	g := &group.Group{Name: name}
	var names string
	err := tx.QueryRowContext(ctx, `SELECT group_epoch, topic_names, topics_sig, rebalance_at, rebalance_ms
		FROM consumer_groups WHERE name = ?`, name).Scan(&g.Epoch, &names, &g.TopicsSig, &g.RebalanceAt, &g.RebalanceMs)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	g.TopicNames = splitNames(names)
	rows, err := tx.QueryContext(ctx, `SELECT member_id, member_epoch, subscription, assigned, revoking, target,
		revoking_since, session_timeout_ms, last_heartbeat, joined_at
		FROM group_members WHERE group_name = ? ORDER BY member_id`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		m := &group.Member{}
		var sub, as, rv, tg string
		if err := rows.Scan(&m.ID, &m.Epoch, &sub, &as, &rv, &tg, &m.RevokingSince, &m.SessionTimeoutMs,
			&m.LastHeartbeat, &m.JoinedAt); err != nil {
			return nil, err
		}
		m.Subscription = splitNames(sub)
		if m.Assigned, err = group.DecodeTPs(as); err == nil {
			if m.Revoking, err = group.DecodeTPs(rv); err == nil {
				m.Target, err = group.DecodeTPs(tg)
			}
		}
		if err != nil {
			return nil, err
		}
		g.Members = append(g.Members, m)
	}
	return g, rows.Err()
}

func splitNames(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// liveTopics returns the live topics among names, by name.
func liveTopics(ctx context.Context, tx *sql.Tx, names []string) (map[string]group.Topic, error) {
	js, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, name, partitions FROM topics
		WHERE deleted_at IS NULL AND name IN (SELECT value FROM json_each(?))`, string(js))
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

// Heartbeat implements metadata.Store.
func (s *Store) Heartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	if err := group.Validate(req); err != nil {
		return metadata.HeartbeatResponse{}, err
	}
	if err := s.checkOpen(); err != nil {
		return metadata.HeartbeatResponse{}, err
	}
	var resp metadata.HeartbeatResponse
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		g, err := loadGroup(ctx, tx, req.Group)
		if err != nil {
			return err
		}
		isNew := g == nil
		if isNew {
			if req.MemberEpoch != metadata.JoinEpoch {
				if req.MemberEpoch == metadata.LeaveEpoch {
					resp = metadata.HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: metadata.LeaveEpoch, Assigned: []group.TP{}}
					return nil
				}
				return fmt.Errorf("%w: %q: group %q does not exist", metadata.ErrUnknownMember, req.MemberID, req.Group)
			}
			g = &group.Group{Name: req.Group}
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
		return writeHeartbeat(ctx, tx, g, out, isNew, now)
	})
	if err != nil {
		return metadata.HeartbeatResponse{}, s.wrap("heartbeat "+req.Group, err)
	}
	return resp, nil
}

func writeHeartbeat(ctx context.Context, tx *sql.Tx, g *group.Group, out group.Outcome, isNew bool, now int64) error {
	if isNew {
		if _, err := tx.ExecContext(ctx, "INSERT INTO consumer_groups (name, created_at) VALUES (?, ?)", g.Name, now); err != nil {
			return err
		}
	}
	if isNew || out.GroupChanged {
		if _, err := tx.ExecContext(ctx, `UPDATE consumer_groups SET group_epoch = ?, topic_names = ?, topics_sig = ?,
			rebalance_at = ?, rebalance_ms = ? WHERE name = ?`, g.Epoch, strings.Join(g.TopicNames, ","), g.TopicsSig,
			g.RebalanceAt, g.RebalanceMs, g.Name); err != nil {
			return err
		}
	}
	for _, id := range out.Deleted {
		if _, err := tx.ExecContext(ctx, "DELETE FROM group_members WHERE group_name = ? AND member_id = ?", g.Name, id); err != nil {
			return err
		}
	}
	for _, m := range out.Upsert {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO group_members (group_name, member_id, member_epoch,
			subscription, assigned, revoking, target, revoking_since, session_timeout_ms, last_heartbeat, joined_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.Name, m.ID, m.Epoch, strings.Join(m.Subscription, ","),
			group.EncodeTPs(m.Assigned), group.EncodeTPs(m.Revoking), group.EncodeTPs(m.Target), m.RevokingSince,
			m.SessionTimeoutMs, m.LastHeartbeat, m.JoinedAt); err != nil {
			return err
		}
	}
	return nil
}

// loadFenced loads the group (nil when it does not exist) and fences the
// members that expired (group.Fence), writing what that changed: every
// write that decides on liveness starts here, so that a member it treats
// as gone cannot come back with its old epoch afterwards.
func loadFenced(ctx context.Context, tx *sql.Tx, name string, now int64) (*group.Group, error) {
	g, err := loadGroup(ctx, tx, name)
	if err != nil || !group.AnyExpired(g, now) {
		return g, err
	}
	topics, err := liveTopics(ctx, tx, subscribed(g))
	if err != nil {
		return nil, err
	}
	return g, writeHeartbeat(ctx, tx, g, group.Fence(g, topics, now), false, now)
}

// subscribed is the union of g's members' subscriptions.
func subscribed(g *group.Group) []string {
	var names []string
	for _, m := range g.Members {
		names = append(names, m.Subscription...)
	}
	return group.Canonical(names)
}

// ListGroups implements metadata.Store: two statements whatever the
// number of groups (the groups, then every member), liveness by
// group.LiveOnly.
func (s *Store) ListGroups(ctx context.Context) ([]metadata.GroupListing, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []metadata.GroupListing
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT name, group_epoch, rebalance_ms FROM consumer_groups ORDER BY name")
		if err != nil {
			return err
		}
		var gs []*group.Group
		byName := map[string]*group.Group{}
		for rows.Next() {
			g := &group.Group{}
			if err := rows.Scan(&g.Name, &g.Epoch, &g.RebalanceMs); err != nil {
				rows.Close()
				return err
			}
			gs = append(gs, g)
			byName[g.Name] = g
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if rows, err = tx.QueryContext(ctx, `SELECT group_name, member_id, member_epoch, revoking_since, session_timeout_ms,
			last_heartbeat, assigned, target, revoking FROM group_members ORDER BY group_name, member_id`); err != nil {
			return err
		}
		for rows.Next() {
			var n, as, tg, rv string
			m := &group.Member{}
			if err := rows.Scan(&n, &m.ID, &m.Epoch, &m.RevokingSince, &m.SessionTimeoutMs, &m.LastHeartbeat, &as, &tg, &rv); err != nil {
				rows.Close()
				return err
			}
			if m.Assigned, err = group.DecodeTPs(as); err == nil {
				if m.Target, err = group.DecodeTPs(tg); err == nil {
					m.Revoking, err = group.DecodeTPs(rv)
				}
			}
			if err != nil {
				rows.Close()
				return err
			}
			if g := byName[n]; g != nil {
				g.Members = append(g.Members, m)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := time.Now().UnixMilli()
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

// DescribeGroup implements metadata.Store.
func (s *Store) DescribeGroup(ctx context.Context, name string) (metadata.GroupDescription, error) {
	if err := group.ValidateName("group", name); err != nil {
		return metadata.GroupDescription{}, err
	}
	if err := s.checkOpen(); err != nil {
		return metadata.GroupDescription{}, err
	}
	var d metadata.GroupDescription
	err := s.read(ctx, func(tx *sql.Tx) error {
		g, err := loadGroup(ctx, tx, name)
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
		d = group.Describe(g, offsets, time.Now().UnixMilli())
		return nil
	})
	if err != nil {
		return metadata.GroupDescription{}, s.wrap("describe group "+name, err)
	}
	return d, nil
}

// DeleteGroup implements metadata.Store.
func (s *Store) DeleteGroup(ctx context.Context, name string) error {
	if err := group.ValidateName("group", name); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireEmptyGroup(ctx, tx, name, "wait for its members to leave or expire"); err != nil {
			return err
		}
		for _, q := range []string{"DELETE FROM group_members WHERE group_name = ?",
			"DELETE FROM group_offsets WHERE group_name = ?", "DELETE FROM consumer_groups WHERE name = ?"} {
			if _, err := tx.ExecContext(ctx, q, name); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap("delete group "+name, err)
}

// DeleteOffsets implements metadata.Store.
func (s *Store) DeleteOffsets(ctx context.Context, name string, partitions []metadata.TopicPartition) error {
	if err := group.ValidateName("group", name); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireEmptyGroup(ctx, tx, name, "positions are deleted only while no member consumes"); err != nil {
			return err
		}
		for _, tp := range partitions {
			if _, err := tx.ExecContext(ctx, "DELETE FROM group_offsets WHERE group_name = ? AND topic_id = ? AND partition = ?",
				name, tp.TopicID, tp.Partition); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap("delete offsets of group "+name, err)
}

// requireEmptyGroup fails unless group name exists without live members.
func requireEmptyGroup(ctx context.Context, tx *sql.Tx, name, what string) error {
	g, err := loadGroup(ctx, tx, name)
	if err != nil {
		return err
	}
	if g == nil {
		return fmt.Errorf("%w: %q", metadata.ErrGroupNotFound, name)
	}
	return group.RequireEmpty(g, time.Now().UnixMilli(), what)
}
