package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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

// Two processes sharing an instance id: the restarted one takes the
// instance over; the stale one is answered FENCED_INSTANCE_ID on its
// heartbeat, sync, join and leave and changes nothing (before, its join
// took the instance back and fenced the new one: a loop of rebalances).
func TestCoordinatorFencesStaleStaticMember(t *testing.T) {
	c := testCoordinator(t)
	inst := "instance-1"
	r := joinReq("")
	r.instanceID = &inst
	ch, _ := c.join(r)
	first := <-ch
	ch, _ = c.join(r) // restarted: no member id, same instance id
	second := <-ch
	if second.code != 0 || second.memberID == first.memberID {
		t.Fatalf("takeover: %+v", second)
	}
	gen := second.generation
	if code := c.heartbeat("g", first.memberID, &inst, gen); code != kerr.FencedInstanceID.Code {
		t.Fatalf("stale heartbeat: %d", code)
	}
	if _, s := c.sync("g", first.memberID, &inst, gen, nil); s.code != kerr.FencedInstanceID.Code {
		t.Fatalf("stale sync: %+v", s)
	}
	stale := r
	stale.memberID = first.memberID
	if _, j := c.join(stale); j.code != kerr.FencedInstanceID.Code {
		t.Fatalf("stale join: %+v", j)
	}
	if codes := c.leave("g", []string{first.memberID}, []*string{&inst}); codes[0] != kerr.FencedInstanceID.Code {
		t.Fatalf("stale leave: %v", codes)
	}
	// The new holder is untouched: same generation, still the member.
	if _, s := c.sync("g", second.memberID, &inst, gen, nil); s.code != 0 {
		t.Fatalf("the holder's sync after the stale requests: %+v", s)
	}
	if code := c.heartbeat("g", second.memberID, &inst, gen); code != 0 {
		t.Fatalf("the holder's heartbeat after the stale requests: %d", code)
	}
	if codes := c.leave("g", []string{""}, []*string{&inst}); codes[0] != 0 {
		t.Fatalf("leave by instance id: %v", codes)
	}
}
