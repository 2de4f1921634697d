package kafka

// static_members.go: the one rule for classic-group requests that name a
// static member (group.instance.id, KIP-345), as Apache Kafka's group
// coordinator applies it: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

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
