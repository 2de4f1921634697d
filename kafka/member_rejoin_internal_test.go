package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRejoinRule: a known member's JoinGroup, state by state (Apache
// Kafka's doExistingMemberJoinGroup).
func TestRejoinRule(t *testing.T) {
	for _, tc := range []struct {
		name         string
		state        groupState
		leader, same bool
		want         rejoin
	}{
		{"preparing, same", statePreparing, false, true, rejoinRebalance},
		{"preparing, leader, same", statePreparing, true, true, rejoinRebalance},
		{"completing, follower, same (a lost answer)", stateCompleting, false, true, rejoinCurrent},
		{"completing, leader, same", stateCompleting, true, true, rejoinCurrent},
		{"completing, changed", stateCompleting, false, false, rejoinRebalance},
		{"stable, follower, same", stateStable, false, true, rejoinCurrent},
		{"stable, follower, changed", stateStable, false, false, rejoinRebalance},
		{"stable, leader, same", stateStable, true, true, rejoinRebalance},
	} {
		if got := rejoinRule(tc.state, tc.leader, tc.same); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSameProtocols(t *testing.T) {
	p := func(kv ...string) (out []kmsg.JoinGroupRequestProtocol) {
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kmsg.JoinGroupRequestProtocol{Name: kv[i], Metadata: []byte(kv[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		a, b []kmsg.JoinGroupRequestProtocol
		want bool
	}{
		{p("range", "x"), p("range", "x"), true},
		{p("range", "x", "sticky", "y"), p("range", "x", "sticky", "y"), true},
		{p("range", "x"), p("range", "y"), false},
		{p("range", "x"), p("sticky", "x"), false},
		{p("range", "x", "sticky", "y"), p("sticky", "y", "range", "x"), false},
		{p("range", "x"), p("range", "x", "sticky", "y"), false},
		{nil, nil, true},
	} {
		if got := sameProtocols(tc.a, tc.b); got != tc.want {
			t.Errorf("%v vs %v: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// A known member's repeated JoinGroup: a follower with the same protocols
// is answered with the current generation (Stable and CompletingRebalance;
// the leader in CompletingRebalance with the members), with no rebalance;
// changed metadata, or the leader of a Stable group, rebalances.
func TestCoordinatorRejoinCurrentGeneration(t *testing.T) {
	c := testCoordinator(t)
	_, gen, leader, follower := pairRoles(c, joinedPair(t, c, joinReq))
	// CompletingRebalance: both answers "lost"; both ask again.
	for _, id := range []string{follower, leader} {
		ch, r := c.join(joinReq(id))
		if ch != nil || r.code != 0 || r.generation != gen || r.leader != leader || r.memberID != id {
			t.Fatalf("%s's repeated join while completing: waits %v, %+v", id, ch != nil, r)
		}
		if wantMembers := map[bool]int{true: 2, false: 0}[id == leader]; len(r.members) != wantMembers {
			t.Fatalf("%s's repeated join: %d members, want %d", id, len(r.members), wantMembers)
		}
	}
	syncF, _ := c.sync("g", follower, nil, gen, nil, nil, nil)
	if _, s := c.sync("g", leader, nil, gen, nil, nil, []kmsg.SyncGroupRequestGroupAssignment{{MemberID: leader, MemberAssignment: []byte("L")}, {MemberID: follower, MemberAssignment: []byte("F")}}); s.code != 0 {
		t.Fatalf("leader sync: %+v", s)
	}
	if s := <-syncF; s.code != 0 || string(s.assignment) != "F" {
		t.Fatalf("follower sync: %+v", s)
	}
	// Stable: the follower asks again with the same protocols.
	ch, r := c.join(joinReq(follower))
	if ch != nil || r.code != 0 || r.generation != gen || len(r.members) != 0 {
		t.Fatalf("follower's repeated join while stable: waits %v, %+v", ch != nil, r)
	}
	if code := c.heartbeat("g", leader, nil, gen); code != 0 {
		t.Fatalf("the leader's heartbeat after the follower's repeated join: %d (a rebalance)", code)
	}
	if _, s := c.sync("g", follower, nil, gen, nil, nil, nil); s.code != 0 || string(s.assignment) != "F" {
		t.Fatalf("follower's sync after its repeated join: %+v", s)
	}
	// Changed metadata rebalances.
	changed := joinReq(follower)
	changed.protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{2}}}
	chF, _ := c.join(changed)
	if chF == nil {
		t.Fatal("a follower's join with changed metadata was answered at once")
	}
	if code := c.heartbeat("g", leader, nil, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("after changed metadata: %d, want REBALANCE_IN_PROGRESS", code)
	}
	chL, _ := c.join(joinReq(leader))
	jf, jl := <-chF, <-chL
	if jf.generation != gen+1 || jl.generation != gen+1 {
		t.Fatalf("the rebalance: %+v / %+v", jf, jl)
	}
	if _, s := c.sync("g", jl.leader, nil, gen+1, nil, nil, nil); s.code != 0 {
		t.Fatalf("sync: %+v", s)
	}
	if _, s := c.sync("g", follower, nil, gen+1, nil, nil, nil); s.code != 0 {
		t.Fatalf("sync: %+v", s)
	}
	// The leader of a Stable group rebalances even with the same protocols.
	if ch, r := c.join(joinReq(jl.leader)); ch == nil {
		t.Fatalf("the leader's join while stable was answered at once: %+v", r)
	}
	if code := c.heartbeat("g", follower, nil, gen+1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("after the leader's join: %d, want REBALANCE_IN_PROGRESS", code)
	}
}

// A rebalance waits for a member id that MEMBER_ID_REQUIRED handed out
// (its second join is on its way), as Kafka's does, instead of completing
// without it and rebalancing again when it arrives; a pending id that
// expires (its session) or leaves no longer holds the join.
func TestCoordinatorJoinAwaitsPendingMember(t *testing.T) {
	c := testCoordinator(t)
	joinReq := func(id string) joinRequest { // sessions of 1 s, rebalances of an hour
		r := joinReq(id)
		r.rebalance = time.Hour
		return r
	}
	_, r := c.join(joinReq(""))
	a := r.memberID
	ch, _ := c.join(joinReq(a))
	if j := <-ch; j.code != 0 {
		t.Fatalf("first join: %+v", j)
	}
	if _, s := c.sync("g", a, nil, 1, nil, nil, nil); s.code != 0 {
		t.Fatalf("sync: %+v", s)
	}
	_, rb := c.join(joinReq("")) // b: MEMBER_ID_REQUIRED, not back yet
	_, rc := c.join(joinReq(""))
	chC, _ := c.join(joinReq(rc.memberID)) // c's join starts the rebalance
	chA, _ := c.join(joinReq(a))           // a rejoins
	select {
	case j := <-chA:
		t.Fatalf("the join completed while b's id was pending: %+v", j)
	default:
	}
	chB, _ := c.join(joinReq(rb.memberID))
	ja, jb, jc := <-chA, <-chB, <-chC
	if ja.generation != 2 || jb.generation != 2 || jc.generation != 2 || len(ja.members)+len(jb.members)+len(jc.members) != 3 {
		t.Fatalf("the join with b: %+v / %+v / %+v", ja, jb, jc)
	}
	if _, s := c.sync("g", ja.leader, nil, 2, nil, nil, nil); s.code != 0 {
		t.Fatalf("sync: %+v", s)
	}
	// A pending id that never comes back holds the join for its session.
	_, rd := c.join(joinReq(""))
	chB, _ = c.join(joinReq(jb.memberID)) // b's rejoin (a follower, same protocols: answered at once)
	if chB != nil {
		t.Fatal("a follower's repeated join in a stable group waits")
	}
	_, re := c.join(joinReq(""))
	chE, _ := c.join(joinReq(re.memberID))
	chs := []<-chan joinResult{chE}
	for _, id := range []string{ja.memberID, jb.memberID, jc.memberID} {
		ch, _ := c.join(joinReq(id))
		chs = append(chs, ch)
	}
	select {
	case j := <-chE:
		t.Fatalf("the join completed while d's id was pending: %+v", j)
	default:
	}
	c.mu.Lock()
	c.tick(c.groups["g"], time.Now().Add(2*time.Second)) // past d's session (1 s), long before the rebalance timeout
	c.mu.Unlock()
	for _, ch := range chs {
		if j := <-ch; j.code != 0 || j.generation != 3 {
			t.Fatalf("the join after d's id expired: %+v", j)
		}
	}
	c.mu.Lock()
	_, stillPending := c.groups["g"].pending[rd.memberID]
	c.mu.Unlock()
	if stillPending {
		t.Fatal("the expired pending id is still held")
	}
}

// An empty group's first join does not wait for a pending id (Kafka ends
// it on its initial delay's timer, 0 here), and a pending id refused for
// the group's size releases the join that waited for it.
func TestCoordinatorPendingEdges(t *testing.T) {
	c := testCoordinator(t)
	_, ra := c.join(joinReq(""))
	c.join(joinReq("")) // a second consumer, MEMBER_ID_REQUIRED, then gone
	chA, _ := c.join(joinReq(ra.memberID))
	select {
	case j := <-chA:
		if j.code != 0 || j.generation != 1 || len(j.members) != 1 {
			t.Fatalf("the first join: %+v", j)
		}
	case <-time.After(time.Second):
		t.Fatal("an empty group's first join waits for a pending id")
	}

	cfg := DefaultConfig()
	cfg.MinSessionTimeout, cfg.MaxGroupMembers = 10*time.Millisecond, 2
	s, err := New(cfg, nopBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c = s.groups
	long := func(id string) joinRequest {
		r := joinReq(id)
		r.rebalance = time.Hour
		return r
	}
	_, ra = c.join(long(""))
	chA, _ = c.join(long(ra.memberID))
	ja := <-chA
	if _, sr := c.sync("g", ja.memberID, nil, ja.generation, nil, nil, nil); sr.code != 0 {
		t.Fatalf("sync: %+v", sr)
	}
	_, rb := c.join(long(""))
	_, rc := c.join(long(""))
	chB, _ := c.join(long(rb.memberID)) // the rebalance: a and b, c pending
	chA, _ = c.join(long(ja.memberID))
	select {
	case j := <-chA:
		t.Fatalf("completed while c was pending: %+v", j)
	default:
	}
	if _, r := c.join(long(rc.memberID)); r.code != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("a third member of a group of at most two: %+v", r)
	}
	for _, ch := range []<-chan joinResult{chA, chB} {
		select {
		case j := <-ch:
			if j.code != 0 || j.generation != 2 {
				t.Fatalf("the join after c was refused: %+v", j)
			}
		case <-time.After(time.Second):
			t.Fatal("the join still waits for the refused pending id")
		}
	}
}
