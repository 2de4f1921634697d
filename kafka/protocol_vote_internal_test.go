package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestVoteProtocol: the protocol a classic group uses (Apache Kafka's
// selectProtocol), with floe's tie-break by the leader's order.
func TestVoteProtocol(t *testing.T) {
	l := func(names ...string) []string { return names }
	for _, tc := range []struct {
		name    string
		leader  []string
		members [][]string
		want    string
	}{
		{"one member", l("sticky", "range"), [][]string{l("sticky", "range")}, "sticky"},
		{"only one shared", l("sticky", "range"), [][]string{l("sticky", "range"), l("range")}, "range"},
		{"majority over the leader", l("range", "sticky"), [][]string{l("range", "sticky"), l("sticky", "range"), l("sticky", "range")}, "sticky"},
		{"tie: the leader's order", l("range", "sticky"), [][]string{l("range", "sticky"), l("sticky", "range")}, "range"},
		{"tie: the leader's order, other leader", l("sticky", "range"), [][]string{l("range", "sticky"), l("sticky", "range")}, "sticky"},
		{"a vote skips what not all list", l("rr", "range"), [][]string{l("rr", "range"), l("rr", "range"), l("range")}, "range"},
		{"no protocol all list", l("a", "b"), [][]string{l("a", "b"), l("b", "c"), l("c", "a")}, "a"},
		{"no leader protocols", nil, [][]string{l("a")}, ""},
	} {
		if got := voteProtocol(tc.leader, tc.members); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Through the coordinator: a leader preferring range and two members
// preferring sticky: the generation uses sticky, the answers say so, and
// the leader gets sticky's metadata for every member.
func TestCoordinatorProtocolVote(t *testing.T) {
	c := testCoordinator(t)
	req := func(id string, first, second string) joinRequest {
		r := joinReq(id)
		r.protocols = []kmsg.JoinGroupRequestProtocol{{Name: first, Metadata: []byte(first)}, {Name: second, Metadata: []byte(second)}}
		return r
	}
	_, r := c.join(req("", "range", "sticky"))
	leader := r.memberID
	ch, _ := c.join(req(leader, "range", "sticky"))
	if j := <-ch; j.protocol != "range" {
		t.Fatalf("alone: %q", j.protocol)
	}
	var chs []<-chan joinResult
	for range 2 {
		_, r := c.join(req("", "sticky", "range"))
		ch, _ := c.join(req(r.memberID, "sticky", "range"))
		chs = append(chs, ch)
	}
	chL, _ := c.join(req(leader, "range", "sticky"))
	jl := <-chL
	if jl.leader != leader || jl.protocol != "sticky" || len(jl.members) != 3 {
		t.Fatalf("the leader's answer: %+v", jl)
	}
	for _, m := range jl.members {
		if string(m.ProtocolMetadata) != "sticky" {
			t.Fatalf("member %s's metadata %q, want sticky's", m.MemberID, m.ProtocolMetadata)
		}
	}
	for _, ch := range chs {
		if j := <-ch; j.protocol != "sticky" || j.generation != jl.generation {
			t.Fatalf("a follower's answer: %+v", j)
		}
	}
}
