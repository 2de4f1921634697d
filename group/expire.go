package group

import "time"

// Expire reports whether group g is past retention at now (unix ms, the
// store's clock), like Kafka's offsets.retention.minutes: it has no live
// member, and neither a commit (lastCommit, 0 when none), a member's
// heartbeat nor its creation (createdAt) is more recent than retention.
// retention <= 0 keeps groups forever.
func Expire(g *Group, createdAt, lastCommit, now int64, retention time.Duration) bool {
	if retention <= 0 || LiveCount(g, now) > 0 {
		return false
	}
	last := max(createdAt, lastCommit)
	for _, m := range g.Members {
		last = max(last, m.LastHeartbeat)
	}
	return last+retention.Milliseconds() < now
}
