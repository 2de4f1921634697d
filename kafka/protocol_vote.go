package kafka

// protocol_vote.go: the one rule for the protocol (assignor) a classic
// group uses in a generation, as Apache Kafka's coordinator chooses it
// (ClassicGroup.selectProtocol): among the protocols every member lists,
// each member votes for the one it lists first, and the most votes win.
// During a rolling change of assignor (members listing [cooperative-sticky,
// range] beside members listing [range, cooperative-sticky]) the majority
// decides, not whichever member happens to lead.

// voteProtocol returns the protocol the group uses: members holds each
// member's protocol names in its order of preference, leader the
// leader's. A tie goes to the protocol the leader lists first (Kafka
// breaks it by a hash map's order). Without a protocol every member lists
// (joins refuse a member that shares none with any other, but three can
// share pairwise and not all together), the leader's first.
func voteProtocol(leader []string, members [][]string) string {
	if len(leader) == 0 {
		return ""
	}
	candidate := func(p string) bool {
		for _, m := range members {
			if !containsName(m, p) {
				return false
			}
		}
		return true
	}
	votes := map[string]int{}
	for _, m := range members {
		for _, p := range m {
			if candidate(p) {
				votes[p]++
				break
			}
		}
	}
	best, most := leader[0], 0
	for _, p := range leader { // the leader's order breaks ties
		if n := votes[p]; n > most {
			best, most = p, n
		}
	}
	return best
}

func containsName(names []string, p string) bool {
	for _, n := range names {
		if n == p {
			return true
		}
	}
	return false
}

// chooseProtocol is voteProtocol for g's members; "" while g has no
// leader (a first join under way). Locked.
func chooseProtocol(g *group) string {
	leader, ok := g.members[g.leader]
	if !ok {
		return ""
	}
	names := func(m *member) []string {
		out := make([]string, len(m.protocols))
		for i, p := range m.protocols {
			out[i] = p.Name
		}
		return out
	}
	all := make([][]string, 0, len(g.members))
	for _, m := range g.members {
		all = append(all, names(m))
	}
	return voteProtocol(names(leader), all)
}
