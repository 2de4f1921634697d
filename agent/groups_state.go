package agent

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/floe-broker/floe/metadata"
)

// groups is the agent's in-memory view of the groups it serves: the live
// group subscriptions (to tell them of their member's commits), the replay
// budgets and the lag samples (consume rates).
type groups struct {
	a *Agent

	mu       sync.Mutex // protects sessions and limiters
	sessions map[string]*groupSession
	limiters map[string]*sharedLimiter

	lag   *lagTracker
	bytes *lagBytes // the scrape's bytes behind (groups_lag_bytes.go)
}

type sharedLimiter struct {
	lim  *rate.Limiter
	refs int
}

func newGroups(a *Agent, reg prometheus.Registerer) *groups {
	g := &groups{a: a, sessions: make(map[string]*groupSession), limiters: make(map[string]*sharedLimiter), lag: newLagTracker(),
		bytes: newLagBytes()}
	g.registerMetrics(reg)
	return g
}

func sessionKey(group, member string) string { return group + "\x00" + member }

func (g *groups) register(s *groupSession) {
	g.mu.Lock()
	g.sessions[sessionKey(s.group, s.memberID)] = s
	g.mu.Unlock()
	g.poke(s)
}

func (g *groups) unregister(s *groupSession) {
	g.mu.Lock()
	if k := sessionKey(s.group, s.memberID); g.sessions[k] == s {
		delete(g.sessions, k)
	}
	g.mu.Unlock()
}

// poke makes the other subscriptions of s's group on this agent heartbeat
// now: a member joined or left, so their assignments change. (Members on
// other agents learn it at their next heartbeat.)
func (g *groups) poke(s *groupSession) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.sessions {
		if o != s && o.group == s.group {
			select {
			case o.poked <- struct{}{}:
			default:
			}
		}
	}
}

// committed tells the member's subscription on this agent, if any, of its
// commit.
func (g *groups) committed(group, member string, offs []metadata.OffsetCommit) {
	if member == "" {
		return
	}
	g.mu.Lock()
	s := g.sessions[sessionKey(group, member)]
	g.mu.Unlock()
	if s != nil {
		s.onCommit(offs)
	}
}

// forget drops what the agent remembers of a deleted group.
func (g *groups) forget(group string) { g.lag.forget(group) }

// acquireLimiter returns the group's replay budget on this agent (nil when
// replay is not limited), shared by its subscriptions here.
func (g *groups) acquireLimiter(group string) *rate.Limiter {
	cfg := g.a.cfg
	if cfg.ReplayBytesPerSecond <= 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.limiters[group]
	if l == nil {
		l = &sharedLimiter{lim: rate.NewLimiter(rate.Limit(cfg.ReplayBytesPerSecond), int(cfg.ReplayBurstBytes))}
		g.limiters[group] = l
	}
	l.refs++
	return l.lim
}

func (g *groups) releaseLimiter(group string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.limiters[group]; l != nil {
		if l.refs--; l.refs <= 0 {
			delete(g.limiters, group)
		}
	}
}

// expireLoop deletes the groups past GroupRetention (group.Expire), every
// tenth of it (between a second and an hour), until ctx ends.
func (g *groups) expireLoop(ctx context.Context) {
	r := g.a.cfg.GroupRetention
	if r <= 0 {
		return
	}
	t := time.NewTicker(min(max(r/10, time.Second), time.Hour))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gone, err := g.a.meta.ExpireGroups(ctx, r)
		if err != nil {
			if ctx.Err() == nil {
				g.a.log.Warn("group expiry failed; retrying later", "err", err)
			}
			continue
		}
		for _, name := range gone {
			g.forget(name)
		}
		if len(gone) > 0 {
			g.a.log.Info("expired empty groups", "count", len(gone), "retention", r)
		}
	}
}
