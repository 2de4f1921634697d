package group

import (
	"fmt"
	"slices"
	"testing"
)

func members(n int, topics ...int64) []Subscriber {
	ms := make([]Subscriber, n)
	for i := range ms {
		ms[i] = Subscriber{ID: fmt.Sprintf("m%03d", i), Topics: topics}
	}
	return ms
}

// checkAssignment fails unless every partition of the subscribed topics is
// assigned exactly once, to a subscriber of its topic.
func checkAssignment(t *testing.T, ms []Subscriber, topics map[int64]int32, a map[string][]TP) {
	t.Helper()
	seen := map[TP]string{}
	subs := map[string]map[int64]bool{}
	union := map[int64]bool{}
	for _, m := range ms {
		subs[m.ID] = map[int64]bool{}
		for _, tp := range m.Topics {
			subs[m.ID][tp] = true
			union[tp] = true
		}
	}
	for id, ps := range a {
		if !slices.IsSortedFunc(ps, CompareTP) {
			t.Errorf("%s: not sorted: %v", id, ps)
		}
		for _, p := range ps {
			if o, dup := seen[p]; dup {
				t.Fatalf("%v assigned to %s and %s", p, o, id)
			}
			if !subs[id][p.TopicID] {
				t.Fatalf("%v assigned to %s, not subscribed", p, id)
			}
			seen[p] = id
		}
	}
	want := 0
	for tp := range union {
		want += int(topics[tp])
	}
	if len(seen) != want {
		t.Fatalf("%d partitions assigned, want %d", len(seen), want)
	}
}

func spread(a map[string][]TP) (lo, hi int) {
	lo = 1 << 30
	for _, ps := range a {
		lo, hi = min(lo, len(ps)), max(hi, len(ps))
	}
	return lo, hi
}

// moves counts partitions whose owner differs between a and b (partitions
// in only one of them do not count).
func moves(a, b map[string][]TP) int {
	owner := map[TP]string{}
	for id, ps := range a {
		for _, p := range ps {
			owner[p] = id
		}
	}
	n := 0
	for id, ps := range b {
		for _, p := range ps {
			if o, ok := owner[p]; ok && o != id {
				n++
			}
		}
	}
	return n
}

func withPrevious(ms []Subscriber, a map[string][]TP) []Subscriber {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Previous = a[out[i].ID]
	}
	return out
}

func TestAssignBalanced(t *testing.T) {
	for _, tc := range []struct {
		members int
		topics  map[int64]int32
	}{
		{1, map[int64]int32{1: 7}},
		{3, map[int64]int32{1: 7}},
		{7, map[int64]int32{1: 3}}, // more members than partitions
		{4, map[int64]int32{1: 5, 2: 5, 3: 1}},
		{100, map[int64]int32{1: 1000}},
		{10, map[int64]int32{}},
	} {
		t.Run(fmt.Sprintf("%d/%v", tc.members, tc.topics), func(t *testing.T) {
			var ids []int64
			for id := range tc.topics {
				ids = append(ids, id)
			}
			ms := members(tc.members, ids...)
			a := Assign(ms, tc.topics)
			checkAssignment(t, ms, tc.topics, a)
			if lo, hi := spread(a); hi-lo > 1 {
				t.Errorf("loads %d..%d, want within 1", lo, hi)
			}
			// Deterministic: the input order does not matter.
			rev := slices.Clone(ms)
			slices.Reverse(rev)
			if b := Assign(rev, tc.topics); moves(a, b) != 0 {
				t.Errorf("reversed input moved %d partitions", moves(a, b))
			}
		})
	}
}

func TestAssignStickyJoinLeave(t *testing.T) {
	topics := map[int64]int32{1: 60, 2: 40} // 100 partitions
	ms := members(10, 1, 2)
	a := Assign(ms, topics)

	// A join: the newcomer's share (100/11 = 9) moves, nothing else.
	joined := append(withPrevious(ms, a), Subscriber{ID: "m999", Topics: []int64{1, 2}})
	b := Assign(joined, topics)
	checkAssignment(t, joined, topics, b)
	if lo, hi := spread(b); hi-lo > 1 {
		t.Errorf("after join: loads %d..%d", lo, hi)
	}
	if got, want := moves(a, b), len(b["m999"]); got != want || want != 9 {
		t.Errorf("join moved %d partitions, newcomer got %d, want 9 and 9", got, want)
	}

	// A leave: only the leaver's partitions move.
	left := withPrevious(ms[1:], a)
	c := Assign(left, topics)
	checkAssignment(t, left, topics, c)
	if lo, hi := spread(c); hi-lo > 1 {
		t.Errorf("after leave: loads %d..%d", lo, hi)
	}
	if got := moves(a, c); got != len(a["m000"]) {
		t.Errorf("leave moved %d partitions, want the leaver's %d", got, len(a["m000"]))
	}

	// Nothing changed: nothing moves.
	if d := Assign(withPrevious(ms, a), topics); moves(a, d) != 0 {
		t.Errorf("same members moved %d partitions", moves(a, d))
	}
}

func TestAssignMixedSubscriptions(t *testing.T) {
	topics := map[int64]int32{1: 6, 2: 6}
	ms := []Subscriber{{ID: "a", Topics: []int64{1}}, {ID: "b", Topics: []int64{1, 2}}, {ID: "c", Topics: []int64{2}}}
	a := Assign(ms, topics)
	checkAssignment(t, ms, topics, a)
	if lo, hi := spread(a); hi-lo > 1 {
		t.Errorf("loads %d..%d, want within 1: %v", lo, hi, a)
	}
	// c leaves: topic 2 goes to b entirely; a keeps topic 1's share.
	ms2 := withPrevious(ms[:2], a)
	b := Assign(ms2, topics)
	checkAssignment(t, ms2, topics, b)
	for _, p := range a["a"] {
		if !slices.Contains(b["a"], p) {
			t.Errorf("a lost %v when c left", p)
		}
	}
	// A member subscribing to a topic that does not exist gets nothing of it.
	ms3 := []Subscriber{{ID: "a", Topics: []int64{1, 9}}}
	checkAssignment(t, ms3, map[int64]int32{1: 6}, Assign(ms3, map[int64]int32{1: 6}))
}

func TestEncodeTPs(t *testing.T) {
	ps := []TP{{TopicID: 1, Partition: 0}, {TopicID: 12, Partition: 345}}
	got, err := DecodeTPs(EncodeTPs(ps))
	if err != nil || !slices.Equal(got, ps) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{"1", "1:x", ":", "1:2,", "a:1"} {
		if _, err := DecodeTPs(bad); err == nil {
			t.Errorf("DecodeTPs(%q) accepted", bad)
		}
	}
}

// BenchmarkAssign1000x100 is a rebalance after one of 100 members left a
// group over 1,000 partitions (the sticky path, the common case).
func BenchmarkAssign1000x100(b *testing.B) {
	topics := map[int64]int32{1: 1000}
	ms := members(101, 1)
	prev := withPrevious(ms, Assign(ms, topics))[1:]
	b.ReportAllocs()
	for b.Loop() {
		Assign(prev, topics)
	}
}

// BenchmarkAssignMixed1000x100 is the mixed-subscription path: 100 members,
// half on topic 1 (500 partitions), half on topics 1 and 2 (500 more).
func BenchmarkAssignMixed1000x100(b *testing.B) {
	topics := map[int64]int32{1: 500, 2: 500}
	ms := members(100, 1)
	for i := 50; i < 100; i++ {
		ms[i].Topics = []int64{1, 2}
	}
	prev := withPrevious(ms, Assign(ms, topics))[1:]
	b.ReportAllocs()
	for b.Loop() {
		Assign(prev, topics)
	}
}
