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
	keys := make([][]int64, len(ms)) // each member's existing topics, sorted
	for i, m := range ms {
		k := make([]int64, 0, len(m.Topics))
		for _, t := range m.Topics {
			if _, ok := topics[t]; ok {
				k = append(k, t)
			}
		}
		slices.Sort(k)
		keys[i] = slices.Compact(k)
		if i > 0 && !slices.Equal(keys[0], keys[i]) {
			homogeneous = false
		}
	}
	var ix *index
	var owner []int32
	if homogeneous {
		set := make(map[int64]bool, len(keys[0]))
		for _, t := range keys[0] {
			set[t] = true
		}
		ix = newIndex(set, topics)
		owner = assignUniform(ms, ix)
	} else {
		union := map[int64]bool{}
		subs := make([]map[int64]bool, len(ms))
		for i, k := range keys {
			subs[i] = make(map[int64]bool, len(k))
			for _, t := range k {
				subs[i][t], union[t] = true, true
			}
		}
		ix = newIndex(union, topics)
		owner = assignGeneral(ms, subs, ix)
	}
	counts := make([]int, len(ms))
	for _, o := range owner {
		counts[o]++
	}
	for i, m := range ms {
		out[m.ID] = make([]TP, 0, counts[i])
	}
	for i, o := range owner { // in partition order: each list comes out sorted
		out[ms[o].ID] = append(out[ms[o].ID], ix.parts[i])
	}
	return out
}

// index numbers the partitions of a set of topics 0..n-1 in (topic,
// partition) order.
type index struct {
	parts []TP
	base  map[int64]int // topic -> number of its partition 0
	count map[int64]int32
}

func newIndex(set map[int64]bool, topics map[int64]int32) *index {
	ids := make([]int64, 0, len(set))
	n := 0
	for t := range set {
		ids = append(ids, t)
		n += int(topics[t])
	}
	slices.Sort(ids)
	ix := &index{parts: make([]TP, 0, n), base: make(map[int64]int, len(ids)), count: make(map[int64]int32, len(ids))}
	for _, t := range ids {
		ix.base[t], ix.count[t] = len(ix.parts), topics[t]
		for p := range topics[t] {
			ix.parts = append(ix.parts, TP{TopicID: t, Partition: p})
		}
	}
	return ix
}

// of returns p's number, or -1 when p is not one of the partitions.
func (ix *index) of(p TP) int {
	b, ok := ix.base[p.TopicID]
	if !ok || p.Partition < 0 || p.Partition >= ix.count[p.TopicID] {
		return -1
	}
	return b + int(p.Partition)
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

// assignUniform: every member subscribes to the same topics. Each member
// gets floor(N/k) or one more; the members with the most previous
// partitions get the extra ones, and each keeps its previous partitions up
// to its quota. It returns the owner (index into ms) of each partition.
func assignUniform(ms []Subscriber, ix *index) []int32 {
	k := len(ms)
	n := len(ix.parts)
	base, extra := n/k, n%k
	owner := make([]int32, n)
	for i := range owner {
		owner[i] = -1
	}
	// prev[i]: member i's previous partitions that still exist, sorted.
	prev := make([][]int, k)
	for i, m := range ms {
		for _, p := range m.Previous {
			if j := ix.of(p); j >= 0 {
				prev[i] = append(prev[i], j)
			}
		}
		slices.Sort(prev[i])
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
	count := make([]int, k)
	for i := range ms {
		for _, j := range prev[i] {
			if count[i] >= quota[i] {
				break
			}
			if owner[j] >= 0 {
				continue // listed by two members' previous targets: first by id wins
			}
			owner[j] = int32(i)
			count[i]++
		}
	}
	i := 0
	for j := range owner {
		if owner[j] >= 0 {
			continue
		}
		for count[i] >= quota[i] {
			i++
		}
		owner[j] = int32(i)
		count[i]++
	}
	return owner
}

// assignGeneral handles mixed subscriptions.
func assignGeneral(ms []Subscriber, subs []map[int64]bool, ix *index) []int32 {
	n := len(ix.parts)
	eligible := make(map[int64][]int, len(ix.base)) // topic -> members, by id
	for i, s := range subs {
		for t := range s {
			eligible[t] = append(eligible[t], i)
		}
	}
	for t := range eligible {
		slices.Sort(eligible[t])
	}
	owner := make([]int32, n)
	for i := range owner {
		owner[i] = -1
	}
	count := make([]int, len(ms))
	for i, m := range ms {
		for _, p := range m.Previous {
			if j := ix.of(p); j >= 0 && subs[i][p.TopicID] && owner[j] < 0 {
				owner[j] = int32(i)
				count[i]++
			}
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
	for j, p := range ix.parts {
		if owner[j] < 0 {
			i := least(p.TopicID)
			owner[j] = int32(i)
			count[i]++
		}
	}
	owned := make([][]int, len(ms)) // partition numbers per member, for moving
	for j, o := range owner {
		owned[o] = append(owned[o], j)
	}
	// Narrow the spread: move a partition from a member to the least loaded
	// eligible member while that gap is at least 2. Each move lowers the
	// sum of squared loads, so this ends.
	for moved := true; moved; {
		moved = false
		for i := range ms {
			for k := len(owned[i]) - 1; k >= 0; k-- {
				j := owned[i][k]
				to := least(ix.parts[j].TopicID)
				if count[i]-count[to] < 2 {
					continue
				}
				owned[i] = slices.Delete(owned[i], k, k+1)
				owned[to] = append(owned[to], j)
				owner[j] = int32(to)
				count[i]--
				count[to]++
				moved = true
			}
		}
	}
	return owner
}
