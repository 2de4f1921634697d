package metadata

import (
	"reflect"
	"testing"
	"time"
)

func TestAgentLive(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		expires time.Time
		want    bool
	}{
		{now.Add(time.Second), true},
		{now, true},
		{now.Add(-time.Microsecond), false},
		{now.Add(-time.Hour), false},
	} {
		if got := AgentLive(tc.expires, now); got != tc.want {
			t.Errorf("AgentLive(now%+v) = %v, want %v", tc.expires.Sub(now), got, tc.want)
		}
	}
}

func TestPlanAgentBeat(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	row := func(id string, node int32, expires time.Duration) AgentRow {
		return AgentRow{AgentInfo: AgentInfo{ID: id, NodeID: node, Host: "h-" + id, Port: 9092}, ExpiresAt: now.Add(expires)}
	}
	info := func(r AgentRow) AgentInfo { return r.AgentInfo }
	me := AgentInfo{ID: "me", Host: "new-host", Port: 9093, Zone: "z"}
	b, c, d := row("b", 7, time.Second), row("c", 3, 0), row("d", 5, -time.Millisecond)
	for _, tc := range []struct {
		name string
		rows []AgentRow
		want AgentBeatPlan
	}{
		{"first beat, empty store", nil, AgentBeatPlan{}},
		{"first beat among others", []AgentRow{b, c, d},
			AgentBeatPlan{Expired: []AgentRow{d}, Others: []AgentInfo{info(c), info(b)}}},
		{"live row keeps its node id", []AgentRow{row("me", 4, time.Second), b},
			AgentBeatPlan{KeepNodeID: true, NodeID: 4, Others: []AgentInfo{info(b)}}},
		{"row expiring now keeps its node id", []AgentRow{row("me", 4, 0)},
			AgentBeatPlan{KeepNodeID: true, NodeID: 4}},
		{"lapsed row gets a new node id", []AgentRow{row("me", 4, -time.Second), d},
			AgentBeatPlan{Expired: []AgentRow{d}}},
	} {
		tc.want.ExpiresAt = now.Add(time.Minute)
		got := PlanAgentBeat(tc.rows, me, now, time.Minute)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: PlanAgentBeat = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	p := PlanAgentBeat([]AgentRow{b, c}, me, now, time.Minute)
	self := me
	self.NodeID = 5
	if got, want := p.Live(self), []AgentInfo{info(c), self, info(b)}; !reflect.DeepEqual(got, want) {
		t.Errorf("Live = %+v, want %+v", got, want)
	}
	self.NodeID = 9
	if got, want := p.Live(self), []AgentInfo{info(c), info(b), self}; !reflect.DeepEqual(got, want) {
		t.Errorf("Live = %+v, want %+v", got, want)
	}
}
