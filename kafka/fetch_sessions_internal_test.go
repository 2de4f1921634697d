package kafka

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1700000000, 0)

func sk(topic string, p int32) sessionKey { return sessionKey{topic, p} }

func reqPart(topic string, p int32, offset int64) sessionPart {
	return sessionPart{key: sk(topic, p), offset: offset, maxBytes: 1 << 20, hwm: -1, lso: -1}
}

// seen is a read that found nothing new: high watermark hwm, log start 0.
func seen(hwm int64) partOutcome { return partOutcome{read: true, hwm: hwm} }

func keysOf(ps []sessionPart) []sessionKey {
	out := make([]sessionKey, len(ps))
	for i, p := range ps {
		out[i] = p.key
	}
	return out
}

// TestMustRespond: Kafka's rule of what an incremental answer carries.
func TestMustRespond(t *testing.T) {
	told := sessionPart{hwm: 10, lso: 2}
	for _, c := range []struct {
		name string
		p    sessionPart
		o    partOutcome
		want bool
	}{
		{"unchanged", told, partOutcome{read: true, hwm: 10, lso: 2}, false},
		{"records", told, partOutcome{read: true, hwm: 10, lso: 2, records: true}, true},
		{"high watermark moved", told, partOutcome{read: true, hwm: 11, lso: 2}, true},
		{"log start moved", told, partOutcome{read: true, hwm: 10, lso: 3}, true},
		{"error", told, partOutcome{err: kerr.OffsetOutOfRange.Code, hwm: -1, lso: -1}, true},
		{"not read (MaxBytes used up)", told, partOutcome{hwm: -1, lso: -1}, false},
		{"never told", sessionPart{hwm: -1, lso: -1}, partOutcome{read: true, hwm: 0, lso: 0}, true},
	} {
		if got := mustRespond(c.p, c.o); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFetchSessionLifecycle walks one session through Kafka's state
// machine: create, incremental answers of changes only, adds, updates,
// forgets, epochs, errors, close.
func TestFetchSessionLifecycle(t *testing.T) {
	c := newFetchSessions(sessionLimits{maxSessions: 10, maxParts: 100, evictAfter: time.Minute})
	full := sessionRequest{epoch: 0, parts: []sessionPart{reqPart("a", 0, 0), reqPart("a", 1, 0), reqPart("b", 0, 5)}}
	plan, code := c.begin(full, t0)
	if code != 0 || plan.incremental || !plan.create || len(plan.parts) != 3 {
		t.Fatalf("full: %+v %d", plan, code)
	}
	id, inc := c.finish(plan, []partOutcome{seen(10), {read: true, hwm: 3, records: true}, seen(5)}, t0)
	if id == 0 || !reflect.DeepEqual(inc, []bool{true, true, true}) {
		t.Fatalf("full answer: id %d, include %v", id, inc)
	}
	if n, p := c.counts(); n != 1 || p != 3 {
		t.Fatalf("counts %d sessions %d partitions", n, p)
	}

	// Epoch 1: a.1 moved on (the client sends its new offset); nothing
	// else changed. Only a.1, which has records again, is answered.
	plan, code = c.begin(sessionRequest{id: id, epoch: 1, parts: []sessionPart{reqPart("a", 1, 3)}}, t0.Add(time.Second))
	if code != 0 || !plan.incremental || plan.epoch != 2 {
		t.Fatalf("epoch 1: %+v %d", plan, code)
	}
	if got := keysOf(plan.parts); !reflect.DeepEqual(got, []sessionKey{sk("a", 0), sk("a", 1), sk("b", 0)}) {
		t.Fatalf("order %v", got)
	}
	if plan.parts[1].offset != 3 || plan.parts[1].hwm != 3 {
		t.Fatalf("an updated partition keeps what it was told: %+v", plan.parts[1])
	}
	if _, inc = c.finish(plan, []partOutcome{seen(10), {read: true, hwm: 7, records: true}, seen(5)}, t0); !reflect.DeepEqual(inc, []bool{false, true, false}) {
		t.Fatalf("epoch 1 include %v", inc)
	}
	// The partition answered with records goes last (read last next time).
	plan, _ = c.begin(sessionRequest{id: id, epoch: 2}, t0)
	if got := keysOf(plan.parts); !reflect.DeepEqual(got, []sessionKey{sk("a", 0), sk("b", 0), sk("a", 1)}) {
		t.Fatalf("order %v", got)
	}
	if _, inc = c.finish(plan, []partOutcome{seen(10), seen(5), seen(7)}, t0); !reflect.DeepEqual(inc, []bool{false, false, false}) {
		t.Fatalf("a quiet fetch answered %v", inc)
	}

	// A replayed or skipped epoch is refused; the session stays.
	for _, e := range []int32{2, 4} {
		if _, code = c.begin(sessionRequest{id: id, epoch: e}, t0); code != kerr.InvalidFetchSessionEpoch.Code {
			t.Fatalf("epoch %d: code %d", e, code)
		}
	}
	// Epoch 3: b.0's high watermark moved, a.0 errs; c.0 added (never
	// told: answered), a.1 forgotten.
	plan, code = c.begin(sessionRequest{id: id, epoch: 3, parts: []sessionPart{reqPart("c", 0, 0)}, forgotten: []sessionKey{sk("a", 1)}}, t0)
	if code != 0 {
		t.Fatal(code)
	}
	if got := keysOf(plan.parts); !reflect.DeepEqual(got, []sessionKey{sk("a", 0), sk("b", 0), sk("c", 0)}) {
		t.Fatalf("after add and forget: %v", got)
	}
	oor := partOutcome{err: kerr.OffsetOutOfRange.Code, hwm: -1, lso: -1}
	if _, inc = c.finish(plan, []partOutcome{oor, seen(6), seen(0)}, t0); !reflect.DeepEqual(inc, []bool{true, true, true}) {
		t.Fatalf("epoch 3 include %v", inc)
	}
	// Epoch 4: the error went away (a.0 is answered again, its high
	// watermark unchanged since before the error); the rest is quiet.
	plan, _ = c.begin(sessionRequest{id: id, epoch: 4}, t0)
	if _, inc = c.finish(plan, []partOutcome{seen(10), seen(6), seen(0)}, t0); !reflect.DeepEqual(inc, []bool{true, false, false}) {
		t.Fatalf("epoch 4 include %v", inc)
	}
	// An error is answered at every fetch while it lasts.
	for e := int32(5); e < 7; e++ {
		plan, _ = c.begin(sessionRequest{id: id, epoch: e}, t0)
		if _, inc = c.finish(plan, []partOutcome{seen(10), oor, seen(0)}, t0); !reflect.DeepEqual(inc, []bool{false, true, false}) {
			t.Fatalf("epoch %d include %v", e, inc)
		}
	}
	if _, p := c.counts(); p != 3 {
		t.Fatalf("%d partitions counted, want 3", p)
	}
	// Epoch -1 closes it.
	if plan, code = c.begin(sessionRequest{id: id, epoch: -1, parts: full.parts}, t0); code != 0 || plan.create || plan.incremental {
		t.Fatalf("close: %+v %d", plan, code)
	}
	if id2, _ := c.finish(plan, []partOutcome{seen(1), seen(1), seen(1)}, t0); id2 != 0 {
		t.Fatalf("a sessionless fetch answered session %d", id2)
	}
	if _, code = c.begin(sessionRequest{id: id, epoch: 7}, t0); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: code %d", code)
	}
	if n, p := c.counts(); n != 0 || p != 0 {
		t.Fatalf("after close: %d sessions, %d partitions", n, p)
	}
	// Session id 0 with an incremental epoch: no such session.
	if _, code = c.begin(sessionRequest{id: 0, epoch: 1}, t0); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("session 0: code %d", code)
	}
}

// TestFetchSessionReopen: a full fetch naming its session (epoch 0)
// closes it and opens a new one.
func TestFetchSessionReopen(t *testing.T) {
	c := newFetchSessions(sessionLimits{maxSessions: 10, maxParts: 100, evictAfter: time.Minute})
	open := func(id int32) int32 {
		plan, code := c.begin(sessionRequest{id: id, epoch: 0, parts: []sessionPart{reqPart("a", 0, 0)}}, t0)
		if code != 0 {
			t.Fatal(code)
		}
		got, _ := c.finish(plan, []partOutcome{seen(1)}, t0)
		return got
	}
	a := open(0)
	b := open(a)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("sessions %d then %d", a, b)
	}
	if _, code := c.begin(sessionRequest{id: a, epoch: 1}, t0); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the old session still answers: %d", code)
	}
	if n, _ := c.counts(); n != 1 {
		t.Fatalf("%d sessions", n)
	}
}

// TestFetchSessionRace: an answer recorded after a later fetch of the
// same session records nothing (the later one's view wins).
func TestFetchSessionRace(t *testing.T) {
	c := newFetchSessions(sessionLimits{maxSessions: 10, maxParts: 100, evictAfter: time.Minute})
	plan, _ := c.begin(sessionRequest{epoch: 0, parts: []sessionPart{reqPart("a", 0, 0)}}, t0)
	id, _ := c.finish(plan, []partOutcome{seen(1)}, t0)
	first, _ := c.begin(sessionRequest{id: id, epoch: 1}, t0)
	second, code := c.begin(sessionRequest{id: id, epoch: 2}, t0)
	if code != 0 {
		t.Fatal(code)
	}
	c.finish(first, []partOutcome{seen(9)}, t0) // stale: not recorded
	if _, inc := c.finish(second, []partOutcome{seen(9)}, t0); !inc[0] {
		t.Fatal("the high watermark the stale answer saw was recorded")
	}
}

// TestFetchSessionBounds: no session past the cache's size (without an
// evictable one) or past the partitions bound; an incremental fetch
// growing past it closes its session.
func TestFetchSessionBounds(t *testing.T) {
	c := newFetchSessions(sessionLimits{maxSessions: 1, maxParts: 2, evictAfter: time.Minute})
	mk := func(n int, at time.Time) int32 {
		var ps []sessionPart
		for i := range n {
			ps = append(ps, reqPart("a", int32(i), 0))
		}
		plan, _ := c.begin(sessionRequest{epoch: 0, parts: ps}, at)
		id, _ := c.finish(plan, make([]partOutcome, n), at)
		return id
	}
	if id := mk(3, t0); id != 0 {
		t.Fatalf("a session of 3 partitions past a bound of 2: %d", id)
	}
	id := mk(1, t0)
	if id == 0 {
		t.Fatal("no session")
	}
	if other := mk(2, t0.Add(time.Second)); other != 0 {
		t.Fatalf("a second session in a cache of 1, the first young: %d", other)
	}
	if _, code := c.begin(sessionRequest{id: id, epoch: 1, parts: []sessionPart{reqPart("b", 0, 0), reqPart("b", 1, 0)}}, t0); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("grown past the bound: code %d", code)
	}
	if n, p := c.counts(); n != 0 || p != 0 {
		t.Fatalf("%d sessions, %d partitions left", n, p)
	}
	off := newFetchSessions(sessionLimits{maxSessions: 0, maxParts: 2, evictAfter: time.Minute})
	plan, _ := off.begin(sessionRequest{epoch: 0, parts: []sessionPart{reqPart("a", 0, 0)}}, t0)
	if id, _ := off.finish(plan, []partOutcome{seen(0)}, t0); id != 0 {
		t.Fatalf("sessions off: %d", id)
	}
}

// TestPickEviction: Kafka's eviction rule.
func TestPickEviction(t *testing.T) {
	const after = time.Minute
	now := t0.Add(time.Hour)
	sess := func(id int32, parts int, created, used time.Duration) *fetchSession {
		return &fetchSession{id: id, parts: make([]sessionPart, parts), created: now.Add(-created), used: now.Add(-used)}
	}
	for _, c := range []struct {
		name   string
		ss     []*fetchSession
		size   int
		want   int32
		wantOK bool
	}{
		{"empty", nil, 5, 0, false},
		{"stale: unused past the eviction time", []*fetchSession{sess(1, 50, 2*after, 2*after), sess(2, 1, 2*after, time.Second)}, 1, 1, true},
		{"the least recently used of the stale", []*fetchSession{sess(1, 5, 9*after, 3*after), sess(2, 5, 9*after, 5*after)}, 1, 2, true},
		{"young sessions are kept", []*fetchSession{sess(1, 1, time.Second, time.Second)}, 100, 0, false},
		{"the fewest partitions, for a larger one", []*fetchSession{sess(1, 3, 2*after, time.Second), sess(2, 2, 2*after, time.Second), sess(3, 1, time.Second, time.Second)}, 3, 2, true},
		{"not for one as small", []*fetchSession{sess(1, 3, 2*after, time.Second), sess(2, 2, 2*after, time.Second)}, 2, 0, false},
		{"the least recently used of the fewest", []*fetchSession{sess(1, 2, 2*after, 2*time.Second), sess(2, 2, 2*after, 3*time.Second), sess(3, 2, 2*after, time.Second)}, 5, 2, true},
	} {
		byID := map[int32]*fetchSession{}
		for _, s := range c.ss {
			byID[s.id] = s
		}
		got, ok := pickEviction(byID, c.size, now, after)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: %d %v, want %d %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

// TestFetchSessionEvicts: a full cache makes room for a session with more
// partitions than an old small one, and the evicted session's next
// incremental fetch is FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessionEvicts(t *testing.T) {
	c := newFetchSessions(sessionLimits{maxSessions: 1, maxParts: 10, evictAfter: time.Minute})
	plan, _ := c.begin(sessionRequest{epoch: 0, parts: []sessionPart{reqPart("a", 0, 0)}}, t0)
	old, _ := c.finish(plan, []partOutcome{seen(0)}, t0)
	later := t0.Add(2 * time.Minute)
	plan, _ = c.begin(sessionRequest{id: old, epoch: 1}, later.Add(-time.Second)) // recently used
	c.finish(plan, []partOutcome{seen(0)}, later)
	plan, _ = c.begin(sessionRequest{epoch: 0, parts: []sessionPart{reqPart("b", 0, 0), reqPart("b", 1, 0)}}, later)
	id, _ := c.finish(plan, []partOutcome{seen(0), seen(0)}, later)
	if id == 0 || id == old {
		t.Fatalf("new session %d (old %d)", id, old)
	}
	if _, code := c.begin(sessionRequest{id: old, epoch: 2}, later); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("evicted session: code %d", code)
	}
}

func TestNextEpoch(t *testing.T) {
	if nextEpoch(1) != 2 || nextEpoch(math.MaxInt32) != 1 {
		t.Fatal(nextEpoch(1), nextEpoch(math.MaxInt32))
	}
}

// TestFetchSessionOwner: a session answers its owner only; another
// client naming its id finds no session, and cannot close it.
func TestFetchSessionOwner(t *testing.T) {
	c := newFetchSessions(sessionLimits{maxSessions: 10, maxParts: 100, evictAfter: time.Minute})
	plan, _ := c.begin(sessionRequest{owner: "alice", epoch: 0, parts: []sessionPart{reqPart("a", 0, 0)}}, t0)
	id, _ := c.finish(plan, []partOutcome{seen(0)}, t0)
	if _, code := c.begin(sessionRequest{owner: "bob", id: id, epoch: 1}, t0); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("another owner: code %d", code)
	}
	c.begin(sessionRequest{owner: "bob", id: id, epoch: -1}, t0)
	if _, code := c.begin(sessionRequest{owner: "alice", id: id, epoch: 1}, t0); code != 0 {
		t.Fatalf("the owner after another's close: code %d", code)
	}
}
