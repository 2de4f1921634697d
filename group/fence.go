package group

import (
	"fmt"
	"slices"
	"strings"

	"github.com/floe-broker/floe/metadata"
)

// Liveness and fencing outside heartbeats: the one rule each store applies
// to commits, resets, copies and deletes (and Describe, LiveOnly), so that
// "is this member alive" has one definition, Member.Expired.

// LiveCount is how many of g's members have not expired at now (0 for a
// nil g: a group that does not exist).
func LiveCount(g *Group, now int64) int {
	if g == nil {
		return 0
	}
	n := 0
	for _, m := range g.Members {
		if !m.Expired(now) {
			n++
		}
	}
	return n
}

// AnyExpired reports whether some member of g is to be fenced at now.
func AnyExpired(g *Group, now int64) bool {
	return g != nil && LiveCount(g, now) < len(g.Members)
}

// Fence fences g's expired members at now as the next heartbeat would
// (the group epoch moves on and the targets are recomputed), for a write
// that decides on liveness: once a commit, reset or copy has treated a
// member as gone, the member cannot come back with its old epoch and undo
// it. topics holds the live topics of the members' subscriptions. Nothing
// to write when no member expired.
func Fence(g *Group, topics map[string]Topic, now int64) Outcome {
	var out Outcome
	if !AnyExpired(g, now) {
		return out
	}
	changed := map[string]*Member{}
	settle(g, nil, topics, now, &out, changed, false)
	if g.RebalanceMs < 0 && g.stable() {
		g.RebalanceMs = now - g.RebalanceAt
	}
	for _, m := range changed {
		out.Upsert = append(out.Upsert, m)
	}
	slices.SortFunc(out.Upsert, func(a, b *Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// CheckCommit decides a commit against g (nil when the group does not
// exist) at now. With a member id: the member exists and has not expired
// (else ErrUnknownMember), req carries its current epoch (else
// ErrStaleMemberEpoch), and it owns every partition committed, assigned or
// still being revoked (else ErrNotPartitionOwner). Without one: the group
// has no live member (else ErrGroupNotEmpty). Partition existence is the
// store's to check.
func CheckCommit(g *Group, req metadata.CommitOffsetsRequest, now int64) error {
	if req.MemberID == "" {
		return RequireEmpty(g, now, "commit with a member id")
	}
	var m *Member
	if g != nil {
		_, m = g.member(req.MemberID)
	}
	switch {
	case m == nil:
		return fmt.Errorf("%w: %q in group %q", metadata.ErrUnknownMember, req.MemberID, req.Group)
	case m.Expired(now):
		return fmt.Errorf("%w: %q in group %q: its session expired", metadata.ErrUnknownMember, req.MemberID, req.Group)
	case m.Epoch != req.MemberEpoch:
		return fmt.Errorf("%w: member %q has epoch %d, not %d", metadata.ErrStaleMemberEpoch, m.ID, m.Epoch, req.MemberEpoch)
	}
	for _, o := range req.Offsets {
		p := TP{TopicID: o.TopicID, Partition: o.Partition}
		_, assigned := slices.BinarySearchFunc(m.Assigned, p, CompareTP)
		_, revoking := slices.BinarySearchFunc(m.Revoking, p, CompareTP)
		if !assigned && !revoking {
			return fmt.Errorf("%w: %q does not own %d/%d", metadata.ErrNotPartitionOwner, m.ID, o.TopicID, o.Partition)
		}
	}
	return nil
}

// RequireEmpty refuses, with ErrGroupNotEmpty, an operation (what: how to
// do it anyway) while g has live members at now.
func RequireEmpty(g *Group, now int64, what string) error {
	if n := LiveCount(g, now); n > 0 {
		return fmt.Errorf("%w: %d in group %q: %s", metadata.ErrGroupNotEmpty, n, g.Name, what)
	}
	return nil
}

// checkLeave decides a leave of member m (nil when not a member): a leave
// naming the epoch of the session that leaves is refused when the member
// has moved on to another epoch (a newer session serves it now).
func checkLeave(m *Member, req metadata.HeartbeatRequest) error {
	if m != nil && req.LeavingEpoch > 0 && m.Epoch != req.LeavingEpoch {
		return fmt.Errorf("%w: leave of member %q at epoch %d, now at %d (served by a newer session)",
			metadata.ErrStaleMemberEpoch, m.ID, req.LeavingEpoch, m.Epoch)
	}
	return nil
}
