package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDelayedJoinEnd: the end of one initial delay (Apache Kafka's
// InitialDelayedJoin).
func TestDelayedJoinEnd(t *testing.T) {
	now := time.Unix(1000, 0)
	const delay = 3 * time.Second
	for _, tc := range []struct {
		name     string
		d        initialDelay
		next     time.Time
		complete bool
	}{
		{"no one new: complete", initialDelay{on: true, end: now.Add(time.Minute)}, time.Time{}, true},
		{"someone new: another delay", initialDelay{on: true, joined: true, end: now.Add(time.Minute)}, now.Add(delay), false},
		{"someone new, little left: up to the end", initialDelay{on: true, joined: true, end: now.Add(time.Second)}, now.Add(time.Second), false},
		{"someone new, at the end: complete", initialDelay{on: true, joined: true, end: now}, time.Time{}, true},
	} {
		next, complete := delayedJoinEnd(tc.d, now, delay)
		if !next.Equal(tc.next) || complete != tc.complete {
			t.Errorf("%s: %v %v, want %v %v", tc.name, next, complete, tc.next, tc.complete)
		}
	}
}

// An empty group's first join waits out the initial delay even when
// every member present has joined, starts it again while new members
// arrive, and completes one delay after the last arrival with all of
// them (before, the second member's join completed it at once).
func TestCoordinatorInitialDelay(t *testing.T) {
	c := delayCoordinator(t)
	long := func(id string) joinRequest {
		r := joinReq(id)
		r.session, r.rebalance = time.Minute, time.Minute
		return r
	}
	var chs []<-chan joinResult
	add := func() {
		_, r := c.join(long(""))
		ch, now := c.join(long(r.memberID))
		if ch == nil {
			t.Fatalf("a join in the initial delay answered at once: %+v", now)
		}
		chs = append(chs, ch)
	}
	waiting := func(when string) {
		t.Helper()
		for _, ch := range chs {
			select {
			case j := <-ch:
				t.Fatalf("%s: a join completed: %+v", when, j)
			default:
			}
		}
	}
	tick := func(at time.Time) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.tick(c.groups["g"], at)
	}
	start := time.Now()
	add()
	add() // every member present has joined: still in the delay
	waiting("two members in the first delay")
	tick(start.Add(1100 * time.Millisecond)) // a new member joined in it: another delay
	waiting("after the first delay, with a new member")
	add()
	tick(start.Add(2200 * time.Millisecond)) // the third joined in the second delay: a third
	waiting("after the second delay")
	tick(start.Add(3300 * time.Millisecond)) // no one new: complete
	leaders := 0
	for _, ch := range chs {
		j := <-ch
		if j.code != 0 || j.generation != 1 {
			t.Fatalf("the join: %+v", j)
		}
		if len(j.members) == 3 {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d answers with the three members, want the leader's", leaders)
	}
}

// A static member restarted during the initial delay replaces itself: not
// a new member, so the delay is not started again (as Kafka).
func TestCoordinatorInitialDelayStaticRestart(t *testing.T) {
	c := delayCoordinator(t)
	inst := "i"
	r := joinReq("")
	r.instanceID, r.session, r.rebalance = &inst, time.Minute, time.Minute
	first, _ := c.join(r)
	second, _ := c.join(r) // the same instance, restarted
	if j := <-first; j.code != kerr.FencedInstanceID.Code {
		t.Fatalf("the replaced member's join: %+v", j)
	}
	c.mu.Lock()
	g := c.groups["g"]
	c.tick(g, g.deadline)
	c.mu.Unlock()
	select {
	case j := <-second:
		if j.code != 0 || j.generation != 1 {
			t.Fatalf("the join: %+v", j)
		}
	default:
		t.Fatal("the delay started again for a static member's restart")
	}
}

// delayCoordinator is testCoordinator with an initial rebalance delay of
// a second.
func delayCoordinator(t *testing.T) *coordinator {
	cfg := DefaultConfig()
	cfg.MinSessionTimeout, cfg.InitialRebalanceDelay = 10*time.Millisecond, time.Second
	s, err := New(cfg, nopBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s.groups
}
