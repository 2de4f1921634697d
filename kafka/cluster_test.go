package kafka

import (
	"fmt"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func agentsFor(n int, zone func(i int) string) []metadata.AgentInfo {
	var out []metadata.AgentInfo
	for i := range n {
		out = append(out, metadata.AgentInfo{ID: fmt.Sprintf("a%d", i), NodeID: int32(i + 1), Host: fmt.Sprintf("10.0.0.%d", i+1), Port: 9092, Zone: zone(i)})
	}
	return out
}

// TestLeaderOf: leaders spread over the agents, only the partitions of a
// departed agent move, and a client naming a zone gets that zone's agents.
func TestLeaderOf(t *testing.T) {
	agents := agentsFor(3, func(i int) string { return []string{"z1", "z2", "z2"}[i] })
	led := map[int32]int{}
	before := map[int32]int32{}
	for p := range int32(300) {
		l := leaderOf(7, p, agents, "")
		led[l.NodeID]++
		before[p] = l.NodeID
		if again := leaderOf(7, p, []metadata.AgentInfo{agents[2], agents[0], agents[1]}, ""); again.NodeID != l.NodeID {
			t.Fatalf("partition %d: leader %d depends on the order of agents (%d)", p, l.NodeID, again.NodeID)
		}
	}
	for _, a := range agents {
		if led[a.NodeID] < 60 {
			t.Errorf("agent %d leads %d of 300 partitions: %v", a.NodeID, led[a.NodeID], led)
		}
	}
	for p := range int32(300) {
		l := leaderOf(7, p, agents[:2], "")
		if before[p] != agents[2].NodeID && l.NodeID != before[p] {
			t.Errorf("partition %d moved from %d to %d though its leader stayed", p, before[p], l.NodeID)
		}
	}
	for p := range int32(100) {
		if l := leaderOf(7, p, agents, "z2"); l.Zone != "z2" {
			t.Fatalf("zone z2 client: partition %d led by %+v", p, l)
		}
		if l := leaderOf(7, p, agents, "z1"); l.NodeID != 1 {
			t.Fatalf("zone z1 client: partition %d led by %+v", p, l)
		}
		if l := leaderOf(7, p, agents, "z9"); l.NodeID != before[p] {
			t.Fatalf("unknown zone: partition %d led by %d, want %d (as without a zone)", p, l.NodeID, before[p])
		}
	}
}

// TestCoordinatorOf: every agent names the same coordinator for a group,
// exactly one owns it, groups spread, and agents sharing one address (a
// Service) each own the groups of that address.
func TestCoordinatorOf(t *testing.T) {
	agents := agentsFor(3, func(int) string { return "" })
	per := map[string]int{}
	for g := range 300 {
		name := fmt.Sprintf("group-%d", g)
		want := coordinatorOf(name, agents, agents[0])
		owners := 0
		for _, self := range agents {
			if got := coordinatorOf(name, agents, self); got.ID != want.ID {
				t.Fatalf("%s: agent %s names %s, agent a0 names %s", name, self.ID, got.ID, want.ID)
			}
			v := clusterView{self: self, agents: agents}
			if v.ownsGroup(name) {
				owners++
			}
		}
		if owners != 1 {
			t.Fatalf("%s: %d owners", name, owners)
		}
		per[want.ID]++
		// A departed non-coordinator does not move the group.
		for i, a := range agents {
			if a.ID == want.ID {
				continue
			}
			rest := append(append([]metadata.AgentInfo{}, agents[:i]...), agents[i+1:]...)
			if got := coordinatorOf(name, rest, want); got.ID != want.ID {
				t.Fatalf("%s moved from %s to %s when %s left", name, want.ID, got.ID, a.ID)
			}
		}
	}
	for _, a := range agents {
		if per[a.ID] < 60 {
			t.Errorf("agent %s coordinates %d of 300 groups: %v", a.ID, per[a.ID], per)
		}
	}
	shared := agentsFor(3, func(int) string { return "" })
	for i := range shared {
		shared[i].Host = "floe-kafka.ns.svc"
	}
	for _, self := range shared {
		if v := (clusterView{self: self, agents: shared}); !v.ownsGroup("g") {
			t.Errorf("behind one address agent %s does not own the group", self.ID)
		}
	}
	solo := clusterView{self: agents[0], agents: agents[:1]}
	if !solo.ownsGroup("anything") {
		t.Error("a lone agent does not own a group")
	}
}

func TestClientZone(t *testing.T) {
	for id, want := range map[string]string{
		"":                         "",
		"app":                      "",
		"floe_az=us-east-1a":       "us-east-1a",
		"app,floe_az=eu-west-1b,x": "eu-west-1b",
		"app floe_az=z3 rest":      "z3",
		"app;floe_az=z4;":          "z4",
		"floe_az=":                 "",
	} {
		if got := clientZone(id); got != want {
			t.Errorf("clientZone(%q) = %q, want %q", id, got, want)
		}
	}
}
