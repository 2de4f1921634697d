package kafka

// static_members.go: the one rule for classic-group requests that name a
// static member (group.instance.id, KIP-345), as Apache Kafka's group
// coordinator applies it: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
// OffsetCommit; and the one for a restarted static member's assignment.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticVerdict is what staticRule decides.
type staticVerdict int8

const (
	// staticOK: a dynamic member, an instance no member holds, or the
	// instance's own member; the request goes on.
	staticOK staticVerdict = iota
	// staticTakeOver: a join without a member id takes the instance over
	// (a restarted static member); its holder is fenced.
	staticTakeOver
	// staticFenced: another member holds the instance; the request is
	// answered FENCED_INSTANCE_ID and changes nothing. (Before, a join of a
	// stale member id took the instance back, and two processes sharing an
	// instance id fenced each other in a loop of rebalances.)
	staticFenced
)

// staticRule decides a request naming instance (nil: a dynamic member) and
// memberID, where holder is the member id that holds the instance now (""
// when none does); join: the request is a JoinGroup.
func staticRule(instance *string, holder, memberID string, join bool) staticVerdict {
	switch {
	case instance == nil || holder == "" || holder == memberID:
		return staticOK
	case join && memberID == "":
		return staticTakeOver
	default:
		return staticFenced
	}
}

// instanceHolder returns the id of g's member holding instance, or "".
// The coordinator's lock is held.
func (g *group) instanceHolder(instance *string) string {
	if instance == nil {
		return ""
	}
	for id, m := range g.members {
		if m.instanceID != nil && *m.instanceID == *instance {
			return id
		}
	}
	return ""
}

// instanceCheck is Kafka's validateMember for an OffsetCommit naming
// instance (its group.instance.id, v7+; nil: none) in a classic group held
// here: UNKNOWN_MEMBER_ID when no member holds the instance,
// FENCED_INSTANCE_ID when another member id does (staticRule), else 0.
func (c *coordinator) instanceCheck(groupName, memberID string, instance *string) int16 {
	if instance == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[groupName]
	if !ok {
		return 0
	}
	holder := g.instanceHolder(instance)
	switch {
	case holder == "":
		return kerr.UnknownMemberID.Code
	case staticRule(instance, holder, memberID, false) == staticFenced:
		return kerr.FencedInstanceID.Code
	}
	return 0
}

// staticKeepsAssignment decides whether a restarted static member (a join
// without a member id that takes its instance over) goes on with its
// previous assignment, without a rebalance, as Apache Kafka's coordinator
// does (KIP-345): only in a Stable group, only when the protocol the group
// would choose with the member's new protocols is the one it uses
// (keepsProtocol), and, for the group's leader, only when its JoinGroup
// version can carry SkipAssignment (v9, KIP-814), so that it does not
// compute an assignment the group would not use. As in Kafka, a changed
// subscription keeps the old assignment; the clients compare the two and
// rejoin.
func staticKeepsAssignment(stable, keepsProtocol, leader, canSkipAssignment bool) bool {
	return stable && keepsProtocol && (!leader || canSkipAssignment)
}

// keepsProtocol reports whether g would choose the protocol it uses with
// old's protocols replaced by protocols. Locked.
func (g *group) keepsProtocol(old *member, protocols []kmsg.JoinGroupRequestProtocol) bool {
	saved := old.protocols
	old.protocols = protocols
	defer func() { old.protocols = saved }()
	return chooseProtocol(g) == g.protocol
}

// replaceStatic gives the restarted static member of old (its join r) a
// new member id with old's assignment, in the same generation, and
// answers the join at once: the leader's answer names every member and
// sets SkipAssignment. old is fenced. Locked.
func (c *coordinator) replaceStatic(g *group, old *member, r joinRequest, now time.Time) joinResult {
	c.failWaiters(old, kerr.FencedInstanceID.Code)
	delete(g.members, old.id)
	m := &member{
		id: newMemberID(r.clientID), instanceID: r.instanceID, clientID: r.clientID, host: r.host,
		protocols: r.protocols, sessionTimeout: r.session, rebalanceTimeout: r.rebalance,
		lastSeen: now, assignment: old.assignment, synced: old.synced,
	}
	g.members[m.id] = m
	res := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader, memberID: m.id}
	if g.leader == old.id {
		g.leader, res.leader = m.id, m.id
		res.members, res.skipAssignment = joinMembers(g), true
	}
	c.s.log.Info("kafka: static member restarted: assignment kept, no rebalance", "group", g.name, "instance", *r.instanceID, "member", m.id, "replaces", old.id)
	return res
}
