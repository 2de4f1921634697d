package placement

import (
	"fmt"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func agents(n int, zone func(i int) string) []metadata.AgentInfo {
	var out []metadata.AgentInfo
	for i := range n {
		out = append(out, metadata.AgentInfo{ID: fmt.Sprintf("a%d", i), NodeID: int32(i + 1), Host: fmt.Sprintf("10.0.0.%d", i+1), Port: 9092, Zone: zone(i)})
	}
	return out
}

func noZone(int) string { return "" }

func leaders(topic int64, parts int32, as []metadata.AgentInfo, zone string) []int32 {
	out := make([]int32, parts)
	for p := range parts {
		out[p] = Leader(topic, p, as, zone).NodeID
	}
	return out
}

// TestLeaderStable: rendezvous placement moves only what it must. When an
// agent leaves, only its partitions move; when one joins, only partitions
// it takes move (to it); no partition depends on the order of the agents;
// partitions spread.
func TestLeaderStable(t *testing.T) {
	const parts = 600
	five := agents(5, noZone)
	for _, tc := range []struct {
		name          string
		before, after []metadata.AgentInfo
		// mayMoveFrom: a partition whose leader was this node may move;
		// mayMoveTo: a moved partition must land here (0: anywhere alive).
		mayMoveFrom, mayMoveTo int32
	}{
		{"one of five leaves", five, append(append([]metadata.AgentInfo{}, five[:2]...), five[3:]...), 3, 0},
		{"last of five leaves", five, five[:4], 5, 0},
		{"a fifth joins", five[:4], five, 0, 5},
		{"a second joins", five[:1], five[:2], 0, 2},
		{"reordered", five, []metadata.AgentInfo{five[4], five[2], five[0], five[3], five[1]}, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was, now := leaders(9, parts, tc.before, ""), leaders(9, parts, tc.after, "")
			moved := 0
			for p := range was {
				if was[p] == now[p] {
					continue
				}
				moved++
				switch {
				case tc.mayMoveFrom < 0 || tc.mayMoveTo < 0:
					t.Fatalf("partition %d moved from %d to %d", p, was[p], now[p])
				case tc.mayMoveFrom > 0 && was[p] != tc.mayMoveFrom:
					t.Fatalf("partition %d moved from %d to %d; only %d's may move", p, was[p], now[p], tc.mayMoveFrom)
				case tc.mayMoveTo > 0 && now[p] != tc.mayMoveTo:
					t.Fatalf("partition %d moved from %d to %d; only to %d", p, was[p], now[p], tc.mayMoveTo)
				}
			}
			if tc.mayMoveFrom >= 0 && tc.mayMoveTo >= 0 {
				n := max(len(tc.before), len(tc.after))
				// The departing or joining agent's share, within a wide margin.
				if moved < parts/n/2 || moved > 2*parts/n {
					t.Fatalf("%d of %d partitions moved, want about %d", moved, parts, parts/n)
				}
			}
			per := map[int32]int{}
			for _, l := range now {
				per[l]++
			}
			for _, a := range tc.after {
				if per[a.NodeID] < parts/len(tc.after)/2 {
					t.Errorf("agent %d leads %d of %d partitions: %v", a.NodeID, per[a.NodeID], parts, per)
				}
			}
		})
	}
}

// TestLeaderZone: a client naming a zone gets that zone's agents; a zone
// no agent is in places as no zone does.
func TestLeaderZone(t *testing.T) {
	as := agents(3, func(i int) string { return []string{"z1", "z2", "z2"}[i] })
	for _, tc := range []struct {
		zone string
		want func(l metadata.AgentInfo, p int32) bool
	}{
		{"z1", func(l metadata.AgentInfo, _ int32) bool { return l.NodeID == 1 }},
		{"z2", func(l metadata.AgentInfo, _ int32) bool { return l.Zone == "z2" }},
		{"z9", func(l metadata.AgentInfo, p int32) bool { return l.NodeID == Leader(7, p, as, "").NodeID }},
		{"", func(l metadata.AgentInfo, _ int32) bool { return l.NodeID >= 1 && l.NodeID <= 3 }},
	} {
		for p := range int32(100) {
			if l := Leader(7, p, as, tc.zone); !tc.want(l, p) {
				t.Fatalf("zone %q: partition %d led by %+v", tc.zone, p, l)
			}
		}
	}
}
