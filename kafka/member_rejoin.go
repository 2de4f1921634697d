package kafka

// member_rejoin.go: the one rule for a JoinGroup from a member a classic
// group already has (its member id), as Apache Kafka's group coordinator
// applies it (doExistingMemberJoinGroup): a member whose protocols did not
// change is answered with the current generation instead of starting a
// rebalance, unless it is the leader of a Stable group.

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rejoin is what rejoinRule decides.
type rejoin int8

const (
	// rejoinRebalance: the member's join starts a rebalance, or joins the
	// one under way, and waits for it.
	rejoinRebalance rejoin = iota
	// rejoinCurrent: the member is answered at once with the current
	// generation (the leader, in CompletingRebalance, with the members),
	// and goes on to SyncGroup. A member whose JoinGroup answer was lost
	// and that asks again, or a follower that rejoins with the
	// subscription it has, no longer makes every member rejoin.
	rejoinCurrent
)

// rejoinRule decides a JoinGroup from a known member in state, where
// leader says it leads the group and same that its protocols (names and
// metadata, in order) are those it joined with. In a Stable group the
// leader's join always rebalances: that is how a leader asks for a new
// assignment for changes its metadata does not show (a topic's new
// partitions).
func rejoinRule(state groupState, leader, same bool) rejoin {
	switch {
	case state == stateCompleting && same:
		return rejoinCurrent
	case state == stateStable && same && !leader:
		return rejoinCurrent
	default:
		return rejoinRebalance
	}
}

// sameProtocols reports whether a and b name the same protocols with the
// same metadata, in the same order (Kafka's member.matches).
func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Metadata, b[i].Metadata) {
			return false
		}
	}
	return true
}

// currentGeneration is the answer of rejoinCurrent for m. Locked.
func currentGeneration(g *group, m *member) joinResult {
	r := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader, memberID: m.id}
	if g.state == stateCompleting && m.id == g.leader {
		r.members = joinMembers(g)
	}
	return r
}
