package kafka

import "testing"

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
