package group

import (
	"time"

	"github.com/floe-broker/floe/metadata"
)

// LiveOnly is g without its expired members.
func LiveOnly(g *Group, now int64) *Group {
	c := *g
	c.Members = nil
	for _, m := range g.Members {
		if !m.Expired(now) {
			c.Members = append(c.Members, m)
		}
	}
	return &c
}

// Describe builds a description from a loaded group and its offsets.
func Describe(g *Group, offsets []metadata.CommittedOffset, now int64) metadata.GroupDescription {
	live := LiveOnly(g, now)
	d := metadata.GroupDescription{Group: g.Name, State: live.State(), GroupEpoch: g.Epoch, Offsets: offsets,
		Members: []metadata.GroupMember{}}
	if g.RebalanceAt > 0 {
		d.LastRebalance = time.UnixMilli(g.RebalanceAt).UTC()
	}
	d.LastRebalanceDuration = g.RebalanceDuration()
	for _, m := range live.Members {
		d.Members = append(d.Members, metadata.GroupMember{
			MemberID: m.ID, MemberEpoch: m.Epoch, Subscription: m.Subscription, Assigned: m.Assigned,
			Revoking: m.Revoking, Target: m.Target, SessionTimeout: time.Duration(m.SessionTimeoutMs) * time.Millisecond,
			LastHeartbeat: time.UnixMilli(m.LastHeartbeat).UTC(), JoinedAt: time.UnixMilli(m.JoinedAt).UTC(),
		})
	}
	return d
}

// RebalanceDuration is how long g's last rebalance took to become stable
// (0 while reconciling or never measured).
func (g *Group) RebalanceDuration() time.Duration {
	return time.Duration(max(g.RebalanceMs, 0)) * time.Millisecond
}
