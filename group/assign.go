// Package group is the pure decision side of consumer groups: the
// assignment of partitions to members (balanced, sticky, deterministic) and
// the heartbeat state machine (membership, epochs, cooperative
// reconciliation) that the metadata backends run inside their transaction.
// It does no I/O and keeps no state between calls.
package group

import (
	"cmp"
	"slices"

	"github.com/floe-broker/floe/metadata"
)

// TP is a partition.
type TP = metadata.TopicPartition

// Subscriber is one member as the assignor sees it.
type Subscriber struct {
	ID     string
	Topics []int64 // topic ids it subscribes to (resolved, existing topics)
	// Previous is the member's previous target (stickiness).
	Previous []TP
}

// Assign computes the target assignment of the partitions of topics (topic
// id -> partition count) over members. Every partition of a topic with at
// least one subscriber goes to exactly one of its subscribers. When all
// members subscribe to the same topics, member loads differ by at most one
// and a member keeps its previous partitions up to its share: a join or a
// leave moves only the partitions that must move. With mixed subscriptions
// partitions are kept where they were, the rest go to the least loaded
// subscriber, and partitions then move from the most loaded members while
// that narrows the spread. The result is deterministic (it depends on ids
// and inputs, not on their order) and sorted per member by (topic, partition).
func Assign(members []Subscriber, topics map[int64]int32) map[string][]TP {
	out := make(map[string][]TP, len(members))
	if len(members) == 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b Subscriber) int { return cmp.Compare(a.ID, b.ID) })
	homogeneous := true
	subs := make([]map[int64]bool, len(ms))
	for i, m := range ms {
		subs[i] = make(map[int64]bool, len(m.Topics))
		for _, t := range m.Topics {
			if _, ok := topics[t]; ok {
				subs[i][t] = true
			}
		}
		if i > 0 && !sameSet(subs[0], subs[i]) {
			homogeneous = false
		}
	}
	var owner map[TP]int
	if homogeneous {
		owner = assignUniform(ms, subs[0], topics)
	} else {
		owner = assignGeneral(ms, subs, topics)
	}
	for _, m := range ms {
		out[m.ID] = []TP{}
	}
	for p, i := range owner {
		out[ms[i].ID] = append(out[ms[i].ID], p)
	}
	for id := range out {
		SortTPs(out[id])
	}
	return out
}

// SortTPs sorts partitions by (topic id, partition).
func SortTPs(ps []TP) {
	slices.SortFunc(ps, CompareTP)
}

// CompareTP orders partitions by (topic id, partition).
func CompareTP(a, b TP) int {
	if c := cmp.Compare(a.TopicID, b.TopicID); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

func sameSet(a, b map[int64]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// allPartitions lists the partitions of the topics in set, sorted.
func allPartitions(set map[int64]bool, topics map[int64]int32) []TP {
	ids := make([]int64, 0, len(set))
	n := 0
	for t := range set {
		ids = append(ids, t)
		n += int(topics[t])
	}
	slices.Sort(ids)
	ps := make([]TP, 0, n)
	for _, t := range ids {
		for p := range topics[t] {
			ps = append(ps, TP{TopicID: t, Partition: p})
		}
	}
	return ps
}

// assignUniform: every member subscribes to the same topics. Each member
// gets floor(N/k) or one more; the members with the most previous
// partitions get the extra ones, and each keeps its previous partitions up
// to its quota.
func assignUniform(ms []Subscriber, set map[int64]bool, topics map[int64]int32) map[TP]int {
	parts := allPartitions(set, topics)
	valid := make(map[TP]bool, len(parts))
	for _, p := range parts {
		valid[p] = true
	}
	k := len(ms)
	base, extra := len(parts)/k, len(parts)%k
	// prev[i]: member i's previous partitions that still exist, sorted.
	prev := make([][]TP, k)
	for i, m := range ms {
		for _, p := range m.Previous {
			if valid[p] {
				prev[i] = append(prev[i], p)
			}
		}
		SortTPs(prev[i])
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	// Members keeping more partitions get the extra slots (fewest moves);
	// ties by id (ms is sorted by id and the sort is stable).
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(prev[b]), len(prev[a])) })
	quota := make([]int, k)
	for rank, i := range order {
		quota[i] = base
		if rank < extra {
			quota[i]++
		}
	}
	owner := make(map[TP]int, len(parts))
	count := make([]int, k)
	for i := range ms {
		for _, p := range prev[i] {
			if count[i] >= quota[i] {
				break
			}
			if _, taken := owner[p]; taken {
				continue // listed by two members' previous targets: first by id wins
			}
			owner[p] = i
			count[i]++
		}
	}
	i := 0
	for _, p := range parts {
		if _, ok := owner[p]; ok {
			continue
		}
		for count[i] >= quota[i] {
			i++
		}
		owner[p] = i
		count[i]++
	}
	return owner
}

// assignGeneral handles mixed subscriptions.
func assignGeneral(ms []Subscriber, subs []map[int64]bool, topics map[int64]int32) map[TP]int {
	union := map[int64]bool{}
	for _, s := range subs {
		for t := range s {
			union[t] = true
		}
	}
	parts := allPartitions(union, topics)
	eligible := make(map[int64][]int, len(union)) // topic -> members, by id
	for i, s := range subs {
		for t := range s {
			eligible[t] = append(eligible[t], i)
		}
	}
	for t := range eligible {
		slices.Sort(eligible[t])
	}
	owner := make(map[TP]int, len(parts))
	count := make([]int, len(ms))
	owned := make([][]TP, len(ms)) // partitions per member, for moving
	for i, m := range ms {
		for _, p := range m.Previous {
			if !subs[i][p.TopicID] || p.Partition >= topics[p.TopicID] || p.Partition < 0 {
				continue
			}
			if _, taken := owner[p]; taken {
				continue
			}
			owner[p] = i
			count[i]++
		}
	}
	least := func(t int64) int {
		best := -1
		for _, i := range eligible[t] {
			if best < 0 || count[i] < count[best] {
				best = i
			}
		}
		return best
	}
	for _, p := range parts {
		if _, ok := owner[p]; !ok {
			i := least(p.TopicID)
			owner[p] = i
			count[i]++
		}
	}
	for _, p := range parts {
		owned[owner[p]] = append(owned[owner[p]], p)
	}
	// Narrow the spread: move a partition from a member to the least loaded
	// eligible member while that gap is at least 2. Each move lowers the
	// sum of squared loads, so this ends.
	for moved := true; moved; {
		moved = false
		for i := range ms {
			for j := len(owned[i]) - 1; j >= 0; j-- {
				p := owned[i][j]
				to := least(p.TopicID)
				if count[i]-count[to] < 2 {
					continue
				}
				owned[i] = slices.Delete(owned[i], j, j+1)
				owned[to] = append(owned[to], p)
				owner[p] = to
				count[i]--
				count[to]++
				moved = true
			}
		}
	}
	return owner
}
