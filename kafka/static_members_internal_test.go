package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticRule, as Apache Kafka's coordinator decides a classic request that
// names a static member (ClassicGroup.validateMember; a join without a
// member id replaces the instance's holder).
func TestStaticRule(t *testing.T) {
	inst := "i-1"
	for _, c := range []struct {
		name             string
		instance         *string
		holder, memberID string
		join             bool
		want             staticVerdict
	}{
		{"dynamic member", nil, "", "m-1", false, staticOK},
		{"dynamic join", nil, "m-2", "", true, staticOK},
		{"the holder itself", &inst, "m-1", "m-1", false, staticOK},
		{"the holder rejoins", &inst, "m-1", "m-1", true, staticOK},
		{"no holder yet: a first join", &inst, "", "", true, staticOK},
		{"no holder: an old id after failover", &inst, "", "m-old", true, staticOK},
		{"no holder: a heartbeat (then UNKNOWN_MEMBER_ID)", &inst, "", "m-old", false, staticOK},
		{"restarted without its id", &inst, "m-1", "", true, staticTakeOver},
		{"a stale id joins", &inst, "m-2", "m-1", true, staticFenced},
		{"a stale id heartbeats or syncs", &inst, "m-2", "m-1", false, staticFenced},
		{"no id outside a join", &inst, "m-2", "", false, staticFenced},
	} {
		if got := staticRule(c.instance, c.holder, c.memberID, c.join); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// staticKeepsAssignment: when a restarted static member goes on with its
// assignment instead of a rebalance (Kafka's KIP-345 and KIP-814).
func TestStaticKeepsAssignment(t *testing.T) {
	for _, c := range []struct {
		name                                string
		stable, same, leader, canSkip, want bool
	}{
		{"follower, stable, same protocols", true, true, false, false, true},
		{"leader that can skip the assignment", true, true, true, true, true},
		{"leader before JoinGroup v9", true, true, true, false, false},
		{"the group's protocol would change", true, false, false, true, false},
		{"group not stable", false, true, false, true, false},
	} {
		if got := staticKeepsAssignment(c.stable, c.same, c.leader, c.canSkip); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A restarted static member of a stable group keeps its assignment in the
// same generation, and the other member sees no rebalance; the leader
// does too with JoinGroup v9 (its answer names every member and sets
// SkipAssignment), and an older leader's restart rebalances.
func TestCoordinatorStaticRestartKeepsAssignment(t *testing.T) {
	c := testCoordinator(t)
	static := func(inst, id string, v9 bool) joinRequest {
		r := joinReq(id)
		r.instanceID, r.canSkipAssignment = &inst, v9
		return r
	}
	// a joins alone, then b: a rejoins with its id.
	chA, _ := c.join(static("a", "", false))
	ja := <-chA
	if _, s := c.sync("g", ja.memberID, nil, ja.generation, nil, nil, nil); ja.code != 0 || s.code != 0 {
		t.Fatalf("a's join: %+v, sync %+v", ja, s)
	}
	chB, _ := c.join(static("b", "", false))
	chA, _ = c.join(static("a", ja.memberID, false))
	ja, jb := <-chA, <-chB
	if ja.code != 0 || jb.code != 0 || ja.generation != jb.generation {
		t.Fatalf("joins: %+v / %+v", ja, jb)
	}
	ids := [2]string{ja.memberID, jb.memberID}
	c.mu.Lock()
	g := c.groups["g"]
	gen, leader := g.generation, g.leader
	insts := map[string]string{}
	for id, m := range g.members {
		insts[id] = *m.instanceID
	}
	c.mu.Unlock()
	follower := ids[0]
	if follower == leader {
		follower = ids[1]
	}
	plan := []kmsg.SyncGroupRequestGroupAssignment{{MemberID: leader, MemberAssignment: []byte("L")}, {MemberID: follower, MemberAssignment: []byte("F")}}
	syncF, _ := c.sync("g", follower, nil, gen, nil, nil, nil)
	if _, s := c.sync("g", leader, nil, gen, nil, nil, plan); s.code != 0 {
		t.Fatalf("leader sync: %+v", s)
	}
	<-syncF

	// The follower restarts: a join without its member id.
	ch, j := c.join(static(insts[follower], "", false))
	if ch != nil || j.code != 0 || j.generation != gen || j.memberID == follower || j.leader != leader || len(j.members) != 0 {
		t.Fatalf("the follower's restart: waits %v, %+v", ch != nil, j)
	}
	if _, s := c.sync("g", j.memberID, nil, gen, nil, nil, nil); s.code != 0 || string(s.assignment) != "F" {
		t.Fatalf("the restarted follower's sync: %+v", s)
	}
	if code := c.heartbeat("g", leader, nil, gen); code != 0 {
		t.Fatalf("the leader after the follower's restart: %d (a rebalance)", code)
	}
	if code := c.heartbeat("g", follower, nil, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("the follower's old id: %d", code)
	}
	follower = j.memberID

	// The leader restarts with JoinGroup v9.
	ch, j = c.join(static(insts[leader], "", true))
	if ch != nil || j.code != 0 || j.generation != gen || j.leader != j.memberID || !j.skipAssignment || len(j.members) != 2 {
		t.Fatalf("the leader's restart (v9): waits %v, %+v", ch != nil, j)
	}
	if _, s := c.sync("g", j.memberID, nil, gen, nil, nil, nil); s.code != 0 || string(s.assignment) != "L" {
		t.Fatalf("the restarted leader's sync: %+v", s)
	}
	if code := c.heartbeat("g", follower, nil, gen); code != 0 {
		t.Fatalf("the follower after the leader's restart: %d (a rebalance)", code)
	}

	// Before v9 a leader's restart rebalances.
	ch, j = c.join(static(insts[leader], "", false))
	if ch == nil {
		t.Fatalf("the leader's restart (v8) answered at once: %+v", j)
	}
	if code := c.heartbeat("g", follower, nil, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("the follower after an old leader's restart: %d", code)
	}
}

// A static member that does not rejoin before a rebalance's deadline
// stays in the group (Apache Kafka removes only dynamic members then):
// the leader, one that rejoined, gets it in its members list to assign
// it its share; it comes back with its member id and is answered with
// the current generation. A dynamic member that did not rejoin is
// removed. A rebalance in which no member rejoined, only static members
// left, waits another rebalance timeout instead of completing with no one
// to answer.
func TestCoordinatorKeepsStaticMemberThatDidNotRejoin(t *testing.T) {
	c := testCoordinator(t)
	inst := "instance-s"
	req := func(id string, static bool) joinRequest {
		r := joinReq(id)
		r.session, r.rebalance = 2*time.Minute, time.Minute // a tick at the rebalance deadline is within the session
		if static {
			r.instanceID = &inst
		}
		return r
	}
	// s (static) forms the group alone and leads it; d (dynamic) joins.
	ch, _ := c.join(req("", true))
	js := <-ch
	if _, sr := c.sync("g", js.memberID, &inst, js.generation, nil, nil, nil); sr.code != 0 {
		t.Fatalf("sync: %+v", sr)
	}
	_, rd := c.join(req("", false))
	chD, _ := c.join(req(rd.memberID, false))
	chS, _ := c.join(req(js.memberID, true))
	jd, js2 := <-chD, <-chS
	if jd.code != 0 || js2.leader != js.memberID {
		t.Fatalf("second generation: %+v / %+v", jd, js2)
	}
	gen := js2.generation
	for _, id := range []string{js.memberID, jd.memberID} {
		if _, sr := c.sync("g", id, nil, gen, nil, nil, nil); sr.code != 0 {
			t.Fatalf("sync %s: %+v", id, sr)
		}
	}
	// A third, dynamic member arrives; d rejoins; s (busy) does not.
	_, re := c.join(req("", false))
	chE, _ := c.join(req(re.memberID, false))
	chD, _ = c.join(req(jd.memberID, false))
	c.mu.Lock()
	g := c.groups["g"]
	c.tick(g, g.deadline) // the rebalance timeout passes
	_, kept := g.members[js.memberID]
	c.mu.Unlock()
	if !kept {
		t.Fatal("the static member that did not rejoin was removed")
	}
	je, jd3 := <-chE, <-chD
	lead := je
	if jd3.leader == jd3.memberID {
		lead = jd3
	}
	if lead.leader != lead.memberID || lead.generation != gen+1 || len(lead.members) != 3 {
		t.Fatalf("the new leader's answer (a member that rejoined, with the static one): %+v / %+v", je, jd3)
	}
	// s comes back: told its generation is old, it joins with its id and
	// is answered with the current one.
	if code := c.heartbeat("g", js.memberID, &inst, gen); code != kerr.IllegalGeneration.Code {
		t.Fatalf("the static member's heartbeat of the old generation: %d", code)
	}
	chS, r := c.join(req(js.memberID, true))
	if chS != nil || r.code != 0 || r.generation != gen+1 {
		t.Fatalf("the static member's rejoin: waits %v, %+v", chS != nil, r)
	}

	// Only static members, none rejoining: the join waits.
	c2 := testCoordinator(t)
	ch, _ = c2.join(req("", true))
	j := <-ch
	if _, sr := c2.sync("g", j.memberID, &inst, j.generation, nil, nil, nil); sr.code != 0 {
		t.Fatalf("sync: %+v", sr)
	}
	c2.mu.Lock()
	g2 := c2.groups["g"]
	c2.rebalance(g2, time.Now()) // as a topic's new partitions would
	c2.tick(g2, g2.deadline)
	state, genNow := g2.state, g2.generation
	c2.mu.Unlock()
	if state != statePreparing || genNow != j.generation {
		t.Fatalf("no member rejoined: state %v generation %d, want PreparingRebalance %d", state, genNow, j.generation)
	}
}
