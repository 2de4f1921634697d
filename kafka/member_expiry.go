package kafka

import "time"

// member_expiry.go: the one rule for when a classic group's coordinator
// removes a member it has not heard from, as Apache Kafka's group
// coordinator applies it (its heartbeat expiration and pending-sync
// timeout): the session bounds every member that is not waiting in a
// JoinGroup or SyncGroup, in every state, PreparingRebalance included;
// and once a join completes, every member must send its SyncGroup within
// the rebalance timeout.

// expiry is what expireRule decides.
type expiry int8

const (
	// expiryNone: the member stays.
	expiryNone expiry = iota
	// expirySession: not heard from for longer than its session timeout
	// and not waiting in a call. During a PreparingRebalance too: a member
	// that crashed while the group rebalances is removed at its session
	// timeout, not held until the rebalance timeout (five minutes for a
	// Java consumer's default max.poll.interval.ms).
	expirySession
	// expirySync: the join completed, the rebalance timeout has passed
	// and the member never sent its SyncGroup. A leader that heartbeats
	// but never syncs would otherwise keep the group in
	// CompletingRebalance, its followers waiting, for ever.
	expirySync
)

// expiryFacts is what expireRule looks at, for one member.
type expiryFacts struct {
	state     groupState
	waiting   bool          // in a JoinGroup or SyncGroup call (that bounds it)
	sinceSeen time.Duration // since the member's last request
	session   time.Duration // its session timeout
	synced    bool          // sent SyncGroup for the current generation
	syncLate  bool          // the generation's sync deadline has passed
}

// expireRule decides whether the coordinator removes a member.
func expireRule(f expiryFacts) expiry {
	switch {
	case f.waiting:
		return expiryNone
	case f.sinceSeen > f.session:
		return expirySession
	case (f.state == stateCompleting || f.state == stateStable) && f.syncLate && !f.synced:
		return expirySync
	default:
		return expiryNone
	}
}
