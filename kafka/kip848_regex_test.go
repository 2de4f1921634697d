package kafka_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// regexMember heartbeats one KIP-848 member with a regex subscription.
type regexMember struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	id    string
	epoch int32
}

// beat sends a heartbeat (the regex only when given) and returns the
// assigned partition count.
func (m *regexMember) beat(regex *string) int {
	m.t.Helper()
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicRegex = m.group, m.id, m.epoch, regex
	if m.epoch == 0 {
		hb.RebalanceTimeoutMillis, hb.Topics = 30000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	r := cgHeartbeat(m.t, m.cl, hb)
	if r.ErrorCode != 0 {
		m.t.Fatalf("heartbeat of %s: %v %v", m.id, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	m.epoch = r.MemberEpoch
	return assignedCount(r)
}

func deleteTopic(t *testing.T, cl *kgo.Client, name string) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{name}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &name}}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic %s: %v %+v", name, err, resp)
	}
}

// TestKIP848RegexSubscription: a member subscribed by regex is assigned
// the partitions of the topics whose whole names match, including topics
// created after it joined and excluding deleted ones (heartbeats that
// leave the regex out keep it); an invalid regex is
// INVALID_REGULAR_EXPRESSION; one that matches nothing joins with nothing.
func TestKIP848RegexSubscription(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "rx-a", 2)
	createTopic(t, cl, "rx-b", 1)
	createTopic(t, cl, "xrx-c", 3) // matches rx-.* only unanchored
	createTopic(t, cl, "other", 3)
	re := "rx-.*"
	m := &regexMember{t: t, cl: cl, group: "rxg", id: "rx-member"}
	if n := m.beat(&re); n != 3 {
		t.Fatalf("join: %d partitions assigned, want 3 (rx-a and rx-b)", n)
	}
	createTopic(t, cl, "rx-new", 4)
	waitFor(t, "the new matching topic's partitions", func() bool { return m.beat(nil) == 7 })
	deleteTopic(t, cl, "rx-a")
	waitFor(t, "the deleted topic's partitions to go", func() bool { return m.beat(nil) == 5 })
	if n := m.beat(&re); n != 5 {
		t.Fatalf("the same regex again: %d partitions", n)
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	bad := "rx-("
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis, hb.SubscribedTopicRegex = "rxg2", "m", 0, 30000, &bad
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := cgHeartbeat(t, cl, hb); r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("invalid regex: %v, want INVALID_REGULAR_EXPRESSION", kerr.ErrorForCode(r.ErrorCode))
	}
	none := "nothing-.*"
	m2 := &regexMember{t: t, cl: cl, group: "rxg3", id: "none-member"}
	if n := m2.beat(&none); n != 0 {
		t.Fatalf("a regex matching nothing: %d partitions", n)
	}
	createTopic(t, cl, "nothing-yet", 2)
	waitFor(t, "the first matching topic", func() bool { return m2.beat(nil) == 2 })
}

// TestKgoRegexConsumerProtocol: franz-go consuming by regex with KIP-848's
// protocol (ServerSideBalancer) reads every record of the matching topics,
// and of a matching topic created while it consumes, none of the others.
func TestKgoRegexConsumerProtocol(t *testing.T) {
	b := startBroker(t, nil)
	p := newClient(t, b)
	for _, tp := range []string{"kr-1", "kr-2", "zz-other"} {
		createTopic(t, p, tp, 2)
		produceAll(t, p, sentRecords(tp, 20))
	}
	c := newClient(t, b, kgo.ConsumeTopics("kr-.*"), kgo.ConsumeRegex(), kgo.ConsumerGroup("kgo-rx"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	count := func(recs []*kgo.Record) map[string]int {
		n := map[string]int{}
		for _, r := range recs {
			n[r.Topic]++
		}
		return n
	}
	got := count(consumeN(t, c, 40))
	if got["kr-1"] != 20 || got["kr-2"] != 20 {
		t.Fatalf("records by topic %v, want 20 of kr-1 and kr-2", got)
	}
	createTopic(t, p, "kr-3", 2)
	produceAll(t, p, sentRecords("kr-3", 10))
	if got := count(consumeN(t, c, 10)); got["kr-3"] != 10 {
		t.Fatalf("after kr-3 was created: %v, want its 10 records", got)
	}
	// The group is floe's (KIP-848, not classic): its member subscribes to
	// the names the broker resolved the regex to.
	d, err := b.c.Groups().DescribeGroup(context.Background(), &floev1.DescribeGroupRequest{Group: "kgo-rx"})
	if err != nil || len(d.GetMembers()) != 1 {
		t.Fatalf("DescribeGroup: %v %v", d, err)
	}
	sub := d.GetMembers()[0].GetSubscription()
	sort.Strings(sub)
	if want := []string{"kr-1", "kr-2", "kr-3"}; !slices.Equal(sub, want) {
		t.Fatalf("subscription %q, want %q", sub, want)
	}
}

// TestKIP848RegexAuthorized: a regex subscription is assigned only the
// matching topics its principal may DESCRIBE.
func TestKIP848RegexAuthorized(t *testing.T) {
	b := startAuthBroker(t)
	root := saslClient(t, b.addr, "SCRAM-SHA-512", "root", "pw-root")
	createTopic(t, root, "rx-seen", 2)
	createTopic(t, root, "rx-hidden", 3)
	b.st.Allow("User:alice", auth.OpRead, auth.Group("arx"))
	b.st.Allow("User:alice", auth.OpDescribe, auth.Topic("rx-seen"))
	alice := saslClient(t, b.addr, "SCRAM-SHA-512", "alice", "pw-alice")
	re := "rx-.*"
	m := &regexMember{t: t, cl: alice, group: "arx", id: "alice-member"}
	if n := m.beat(&re); n != 2 {
		t.Fatalf("alice's regex: %d partitions, want rx-seen's 2", n)
	}
}
