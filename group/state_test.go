package group

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// sim drives Heartbeat with a fake clock, as a store would (one group,
// state kept between calls), and models clients like the conformance test.
type sim struct {
	t       *testing.T
	g       *Group
	topics  map[string]Topic
	now     int64
	nextID  int
	clients map[string]*simClient
}

type simClient struct {
	id    string
	epoch int32
	held  map[TP]bool
	slow  bool
	dead  bool
	sub   []string
}

func newSim(t *testing.T, topics ...Topic) *sim {
	s := &sim{t: t, g: &Group{Name: "g"}, topics: map[string]Topic{}, now: 1_000_000, clients: map[string]*simClient{}}
	for _, tp := range topics {
		s.topics[tp.Name] = tp
	}
	return s
}

func (s *sim) beat(c *simClient, timeout time.Duration) error {
	owned := make([]TP, 0, len(c.held))
	for p := range c.held {
		owned = append(owned, p)
	}
	out, err := Heartbeat(s.g, metadata.HeartbeatRequest{Group: "g", MemberID: c.id, MemberEpoch: c.epoch,
		Subscription: c.sub, Owned: owned, SessionTimeout: timeout}, s.topics, s.now,
		func() string { s.nextID++; return fmt.Sprintf("m%04d", s.nextID) })
	if err != nil {
		return err
	}
	c.id, c.epoch = out.Response.MemberID, out.Response.MemberEpoch
	next := map[TP]bool{}
	for _, p := range out.Response.Assigned {
		next[p] = true
	}
	if c.slow {
		for p := range c.held {
			if !next[p] {
				next[p] = true
				c.slow = false
			}
		}
	} else {
		c.slow = rand.IntN(3) == 0
	}
	c.held = next
	s.clients[c.id] = c
	// A client whose session expired before its next heartbeat stops on
	// its own (as KIP-848 clients do): members fenced by this heartbeat
	// hold nothing from now on.
	for _, id := range out.Deleted {
		if o := s.clients[id]; o != nil && o != c {
			o.dead, o.held = true, nil
		}
	}
	return nil
}

func (s *sim) check(when string) {
	s.t.Helper()
	seen := map[TP]string{}
	for _, m := range s.g.Members {
		for _, p := range append(slices.Clone(m.Assigned), m.Revoking...) {
			if o, dup := seen[p]; dup {
				s.t.Fatalf("%s: state lists %v for %s and %s", when, p, o, m.ID)
			}
			seen[p] = m.ID
		}
	}
	clear(seen)
	for _, c := range s.clients {
		if c.dead {
			continue
		}
		for p := range c.held {
			if o, dup := seen[p]; dup {
				s.t.Fatalf("%s: clients %s and %s both hold %v", when, o, c.id, p)
			}
			seen[p] = c.id
		}
	}
}

func (s *sim) live() []*simClient {
	var l []*simClient
	for _, c := range s.clients {
		if !c.dead {
			l = append(l, c)
		}
	}
	slices.SortFunc(l, func(a, b *simClient) int { return cmpString(a.id, b.id) })
	return l
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestHeartbeatChurn: thousands of joins, leaves, kills and subscription
// changes with a fake clock; after every heartbeat no partition is held by
// two live clients nor listed for two members; once churn stops the group
// becomes stable with every partition held exactly once.
func TestHeartbeatChurn(t *testing.T) {
	s := newSim(t, Topic{ID: 1, Name: "a", Partitions: 20}, Topic{ID: 2, Name: "b", Partitions: 7})
	const timeout = 3 * time.Second
	subs := [][]string{{"a", "b"}, {"a"}, {"b"}, {"a", "b", "missing"}}
	for step := range 3000 {
		s.now += int64(rand.IntN(300))
		l := s.live()
		switch r := rand.IntN(40); {
		case r == 0 && len(l) < 10 || len(l) == 0:
			if err := s.beat(&simClient{held: map[TP]bool{}, sub: subs[rand.IntN(len(subs))]}, timeout); err != nil {
				t.Fatalf("step %d: join: %v", step, err)
			}
		case r == 1:
			c := l[rand.IntN(len(l))]
			out, err := Heartbeat(s.g, metadata.HeartbeatRequest{Group: "g", MemberID: c.id, MemberEpoch: metadata.LeaveEpoch},
				s.topics, s.now, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range out.Deleted {
				s.clients[id].dead, s.clients[id].held = true, nil
			}
		case r == 2:
			l[rand.IntN(len(l))].dead = true // killed; expires later
		case r == 3:
			c := l[rand.IntN(len(l))]
			c.sub = subs[rand.IntN(len(subs))]
			fallthrough
		default:
			c := l[rand.IntN(len(l))]
			if err := s.beat(c, timeout); err != nil {
				if errors.Is(err, metadata.ErrUnknownMember) {
					c.dead = true // fenced after a long silence: a client would rejoin
					continue
				}
				t.Fatalf("step %d: %v", step, err)
			}
		}
		s.check(fmt.Sprintf("step %d", step))
	}
	// Settle: everyone on the same subscription, heartbeating every 500 ms.
	for _, c := range s.live() {
		c.sub = []string{"a", "b"}
	}
	start := s.now
	for round := 0; round == 0 || s.g.State() != metadata.GroupStable || len(s.g.Members) != len(s.live()); round++ {
		if s.now-start > 3*timeout.Milliseconds() {
			t.Fatalf("not stable after %v", 3*timeout)
		}
		s.now += 500
		for _, c := range s.live() {
			if c.dead {
				continue // fenced by an earlier heartbeat of this round
			}
			if err := s.beat(c, timeout); err != nil {
				t.Fatalf("settle: %v", err)
			}
			s.check("settle")
		}
	}
	count := map[TP]int{}
	for _, c := range s.live() {
		for p := range c.held {
			count[p]++
		}
	}
	if len(count) != 27 {
		t.Errorf("stable: %d partitions held, want 27", len(count))
	}
}

// TestRevocationTimeout: a member that never releases a revoked partition
// is fenced after its session timeout, and the partition moves.
func TestRevocationTimeout(t *testing.T) {
	s := newSim(t, Topic{ID: 1, Name: "a", Partitions: 2})
	stubborn := &simClient{held: map[TP]bool{}, sub: []string{"a"}}
	if err := s.beat(stubborn, time.Second); err != nil {
		t.Fatal(err)
	}
	all := slices.Collect(func(yield func(TP) bool) {
		for p := range stubborn.held {
			if !yield(p) {
				return
			}
		}
	})
	other := &simClient{held: map[TP]bool{}, sub: []string{"a"}}
	if err := s.beat(other, time.Second); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		s.now += 300
		// stubborn keeps claiming both partitions.
		if _, err := Heartbeat(s.g, metadata.HeartbeatRequest{Group: "g", MemberID: stubborn.id, MemberEpoch: stubborn.epoch,
			Owned: all, SessionTimeout: time.Second}, s.topics, s.now, nil); err != nil && !errors.Is(err, metadata.ErrUnknownMember) {
			t.Fatal(err)
		}
		if err := s.beat(other, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(other.held) != 2 || len(s.g.Members) != 1 {
		t.Fatalf("other holds %v with %d members; want both partitions after the stubborn member was fenced", other.held, len(s.g.Members))
	}
}

// TestRebalanceAfterDeath: 100 members over 1,000 partitions heartbeating
// at the advertised interval; one dies; the group is stable again within
// two session timeouts (protocol rounds only; the store's latency adds to
// this in production).
func TestRebalanceAfterDeath(t *testing.T) {
	s := newSim(t, Topic{ID: 1, Name: "a", Partitions: 1000})
	const timeout = 6 * time.Second
	for range 100 {
		if err := s.beat(&simClient{held: map[TP]bool{}, sub: []string{"a"}}, timeout); err != nil {
			t.Fatal(err)
		}
	}
	interval := HeartbeatInterval(timeout.Milliseconds()).Milliseconds()
	settle := func() int64 {
		start := s.now
		for step := 0; s.g.State() != metadata.GroupStable || len(s.g.Members) != len(s.live()); step++ {
			// Each live member beats once per interval, spread over it.
			l := s.live()
			for _, c := range l {
				s.now += interval / int64(len(l))
				if err := s.beat(c, timeout); err != nil {
					t.Fatal(err)
				}
			}
			s.check("settle")
			if s.now-start > 10*timeout.Milliseconds() {
				t.Fatal("never stable")
			}
		}
		return s.now - start
	}
	join := settle()
	s.live()[37].dead = true
	death := settle()
	t.Logf("100 members, 1000 partitions, session %v, interval %dms: stable %dms after the joins, %dms after a death",
		timeout, interval, join, death)
	if death > 2*timeout.Milliseconds() {
		t.Errorf("stable %dms after a death, want within two session timeouts (%v)", death, 2*timeout)
	}
}

// BenchmarkHeartbeatRebalance is the Go work of a heartbeat that changes
// the group epoch (a join) in a group of 100 members over 1,000 partitions:
// what the slow path adds inside its transaction.
func BenchmarkHeartbeatRebalance(b *testing.B) {
	topics := map[string]Topic{"a": {ID: 1, Name: "a", Partitions: 1000}}
	g := &Group{Name: "g"}
	n := 0
	newID := func() string { n++; return fmt.Sprintf("m%04d", n) }
	for i := range 100 {
		if _, err := Heartbeat(g, metadata.HeartbeatRequest{Group: "g", Subscription: []string{"a"}}, topics, int64(i), newID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		// A member rejoins: the epoch bumps and the target is recomputed.
		if _, err := Heartbeat(g, metadata.HeartbeatRequest{Group: "g", MemberID: "m0050", Subscription: []string{"a"}}, topics, 200, newID); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReconcileInterval: a member with partitions pending is told to come
// back within ReconcileInterval; a stable one at a third of its session.
func TestReconcileInterval(t *testing.T) {
	s := newSim(t, Topic{ID: 1, Name: "a", Partitions: 4})
	a := &simClient{held: map[TP]bool{}, sub: []string{"a"}}
	if err := s.beat(a, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := Heartbeat(s.g, metadata.HeartbeatRequest{Group: "g", MemberID: "b", Subscription: []string{"a"},
		SessionTimeout: 3 * time.Second}, s.topics, s.now, nil)
	if err != nil || out.Response.Pending != 2 || out.Response.HeartbeatInterval != ReconcileInterval {
		t.Fatalf("joining behind a holder: %+v, %v", out.Response, err)
	}
	// a is told to release two partitions (and to come back soon), then
	// releases them and is stable.
	for i, want := range []time.Duration{ReconcileInterval, time.Second} {
		out, err = Heartbeat(s.g, metadata.HeartbeatRequest{Group: "g", MemberID: a.id, MemberEpoch: a.epoch,
			SessionTimeout: 3 * time.Second}, s.topics, s.now, nil)
		if err != nil || out.Response.HeartbeatInterval != want {
			t.Fatalf("heartbeat %d of the holder: %+v, %v; want interval %v", i, out.Response, err, want)
		}
		a.epoch = out.Response.MemberEpoch
	}
}
