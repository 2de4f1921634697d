package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExpireRule: when the coordinator removes a member it has not heard
// from, state by state (Apache Kafka's heartbeat expiration and
// pending-sync timeout).
func TestExpireRule(t *testing.T) {
	const session = 10 * time.Second
	for _, tc := range []struct {
		name string
		f    expiryFacts
		want expiry
	}{
		{"stable, heard from", expiryFacts{state: stateStable, sinceSeen: time.Second, synced: true}, expiryNone},
		{"stable, session over", expiryFacts{state: stateStable, sinceSeen: session + 1, synced: true}, expirySession},
		{"stable, at the session", expiryFacts{state: stateStable, sinceSeen: session, synced: true}, expiryNone},
		{"preparing, session over, not rejoined", expiryFacts{state: statePreparing, sinceSeen: session + 1}, expirySession},
		{"preparing, waiting in JoinGroup", expiryFacts{state: statePreparing, sinceSeen: time.Hour, waiting: true}, expiryNone},
		{"completing, waiting in SyncGroup", expiryFacts{state: stateCompleting, sinceSeen: time.Hour, waiting: true, synced: true, syncLate: true}, expiryNone},
		{"completing, session over", expiryFacts{state: stateCompleting, sinceSeen: session + 1}, expirySession},
		{"completing, not synced, deadline to come", expiryFacts{state: stateCompleting, sinceSeen: time.Second}, expiryNone},
		{"completing, not synced, deadline passed", expiryFacts{state: stateCompleting, sinceSeen: time.Second, syncLate: true}, expirySync},
		{"completing, synced, deadline passed", expiryFacts{state: stateCompleting, sinceSeen: time.Second, synced: true, syncLate: true}, expiryNone},
		{"stable, follower never synced, deadline passed", expiryFacts{state: stateStable, sinceSeen: time.Second, syncLate: true}, expirySync},
		{"preparing, deadline of the last generation passed", expiryFacts{state: statePreparing, sinceSeen: time.Second, syncLate: true}, expiryNone},
	} {
		tc.f.session = session
		if got := expireRule(tc.f); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A member that stops being heard from while the group rebalances is
// removed at its session timeout, and the join completes for those that
// rejoined, without waiting for the (longer) rebalance timeout.
func TestCoordinatorExpiresMemberDuringRebalance(t *testing.T) {
	c := testCoordinator(t)
	long := func(id string) joinRequest {
		r := joinReq(id)
		r.session, r.rebalance = 100*time.Millisecond, time.Hour
		return r
	}
	ids := joinedPair(t, c, long)
	a, b := ids[0], ids[1]
	// A third member starts a rebalance; a rejoins, b has crashed.
	_, r := c.join(long(""))
	chC, _ := c.join(long(r.memberID))
	chA, _ := c.join(long(a))
	c.mu.Lock()
	g := c.groups["g"]
	if g.state != statePreparing {
		c.mu.Unlock()
		t.Fatalf("state %v, want PreparingRebalance", g.state)
	}
	c.tick(g, time.Now()) // b is within its session: nothing happens
	if _, ok := g.members[b]; !ok || g.state != statePreparing {
		c.mu.Unlock()
		t.Fatal("a member within its session was removed")
	}
	c.tick(g, time.Now().Add(time.Second)) // past b's session, long before the rebalance timeout
	_, still := g.members[b]
	c.mu.Unlock()
	if still {
		t.Fatal("a member past its session is still in the preparing group")
	}
	ja, jc := <-chA, <-chC
	if ja.code != 0 || jc.code != 0 || ja.generation != jc.generation || len(ja.members)+len(jc.members) != 2 {
		t.Fatalf("join after the expiry: %+v / %+v", ja, jc)
	}
}

// A leader that heartbeats but never sends SyncGroup is removed once the
// rebalance timeout has passed after the join; its waiting followers are
// told REBALANCE_IN_PROGRESS and the group rebalances without it. A group
// whose members all synced loses no one at the deadline.
func TestCoordinatorRemovesMemberThatNeverSyncs(t *testing.T) {
	c := testCoordinator(t)
	short := func(id string) joinRequest {
		r := joinReq(id)
		r.session, r.rebalance = 20*time.Second, 200*time.Millisecond
		return r
	}
	g, gen, leader, follower := pairRoles(c, joinedPair(t, c, short))
	syncF, _ := c.sync("g", follower, nil, gen, nil, nil, nil) // waits for the leader
	if code := c.heartbeat("g", leader, nil, gen); code != 0 {
		t.Fatalf("leader heartbeat: %d", code)
	}
	c.mu.Lock()
	c.tick(g, time.Now()) // before the deadline: no one goes
	_, kept := g.members[leader]
	c.mu.Unlock()
	if !kept {
		t.Fatal("the leader was removed before the sync deadline")
	}
	c.mu.Lock()
	c.tick(g, time.Now().Add(time.Second))
	_, kept = g.members[leader]
	state := g.state
	c.mu.Unlock()
	if kept || state != statePreparing {
		t.Fatalf("past the sync deadline: leader kept %v, state %v", kept, state)
	}
	if s := <-syncF; s.code != kerr.RebalanceInProgress.Code {
		t.Fatalf("the waiting follower: %+v", s)
	}
	chF, _ := c.join(short(follower))
	jf := <-chF
	if jf.code != 0 || jf.leader != follower || len(jf.members) != 1 {
		t.Fatalf("the follower's rejoin: %+v", jf)
	}
	if _, s := c.sync("g", follower, nil, jf.generation, nil, nil, []kmsg.SyncGroupRequestGroupAssignment{{MemberID: follower, MemberAssignment: []byte("all")}}); s.code != 0 {
		t.Fatalf("sync: %+v", s)
	}
	c.mu.Lock()
	c.tick(g, time.Now().Add(time.Second))
	_, kept = g.members[follower]
	c.mu.Unlock()
	if !kept {
		t.Fatal("a member that synced was removed at the sync deadline")
	}
}

// joinedPair joins two members (requests from req) into group "g" and
// returns their ids once both are in the same generation.
func joinedPair(t *testing.T, c *coordinator, req func(id string) joinRequest) [2]string {
	t.Helper()
	var ids [2]string
	var chs [2]<-chan joinResult
	for i := range ids {
		_, r := c.join(req(""))
		ids[i] = r.memberID
		var now joinResult
		chs[i], now = c.join(req(ids[i]))
		if chs[i] == nil {
			t.Fatalf("join: %+v", now)
		}
		if i == 0 {
			if j := <-chs[0]; j.code != 0 {
				t.Fatalf("first join: %+v", j)
			}
			if _, s := c.sync("g", ids[0], nil, 1, nil, nil, nil); s.code != 0 {
				t.Fatalf("first sync: %+v", s)
			}
		}
	}
	chA, now := c.join(req(ids[0]))
	if chA == nil {
		t.Fatalf("the first member's rejoin: %+v", now)
	}
	ja, jb := <-chA, <-chs[1]
	if ja.code != 0 || jb.code != 0 || ja.generation != jb.generation {
		t.Fatalf("joins: %+v / %+v", ja, jb)
	}
	return ids
}

// pairRoles returns group "g", its generation, and which of ids (a joined
// pair) leads and which follows.
func pairRoles(c *coordinator, ids [2]string) (g *group, gen int32, leader, follower string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g = c.groups["g"]
	gen, leader, follower = g.generation, g.leader, ids[0]
	if follower == leader {
		follower = ids[1]
	}
	return g, gen, leader, follower
}
