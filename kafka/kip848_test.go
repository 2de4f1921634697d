package kafka_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// cgHeartbeat sends one ConsumerGroupHeartbeat.
func cgHeartbeat(t *testing.T, cl *kgo.Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func assignedCount(r *kmsg.ConsumerGroupHeartbeatResponse) int {
	if r.Assignment == nil {
		return 0
	}
	n := 0
	for _, t := range r.Assignment.Topics {
		n += len(t.Partitions)
	}
	return n
}

// TestKIP848SharedWithGRPC: a Kafka member of KIP-848's protocol and a
// gRPC member are members of one floe group: the partitions are divided
// between them, the Kafka member's commits are fenced by its member epoch,
// and its leave hands everything to the gRPC member.
func TestKIP848SharedWithGRPC(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	ctx := context.Background()
	createTopic(t, cl, "shared", 4)
	const group = "mixed"

	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.MemberEpoch, join.RebalanceTimeoutMillis = group, "kafka-member-1", 0, 30000
	join.SubscribedTopicNames, join.Topics = []string{"shared"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	r := cgHeartbeat(t, cl, join)
	if r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID != "kafka-member-1" || r.MemberEpoch <= 0 || assignedCount(r) != 4 {
		t.Fatalf("join: %+v", r)
	}
	kEpoch := r.MemberEpoch

	// A gRPC member joins the same group.
	g, err := b.c.Groups().Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: group, MemberEpoch: 0, Subscription: []string{"shared"}})
	if err != nil {
		t.Fatal(err)
	}
	// The Kafka member is asked to give two partitions up; it heartbeats
	// (owned unchanged: null) until its assignment shrinks, then reports
	// what it keeps.
	var kept []kmsg.ConsumerGroupHeartbeatRequestTopic
	waitFor(t, "the Kafka member to be asked to release two partitions", func() bool {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch = group, "kafka-member-1", kEpoch
		r := cgHeartbeat(t, cl, hb)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		kEpoch = r.MemberEpoch
		if assignedCount(r) == 2 {
			for _, at := range r.Assignment.Topics {
				kept = append(kept, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
			}
			return true
		}
		return false
	})
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.Topics = group, "kafka-member-1", kEpoch, kept
	if r := cgHeartbeat(t, cl, hb); r.ErrorCode != 0 {
		t.Fatalf("release: %v", kerr.ErrorForCode(r.ErrorCode))
	} else {
		kEpoch = r.MemberEpoch
	}
	// The gRPC member now gets the two released partitions.
	gEpoch, gID := g.GetMemberEpoch(), g.GetMemberId()
	waitFor(t, "the gRPC member's two partitions", func() bool {
		g, err = b.c.Groups().Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: group, MemberId: gID, MemberEpoch: gEpoch, Owned: g.GetAssigned()})
		if err != nil {
			t.Fatal(err)
		}
		gEpoch = g.GetMemberEpoch()
		return len(g.GetAssigned()) == 2
	})

	// A commit at the Kafka member's epoch lands; at an older one it is
	// STALE_MEMBER_EPOCH; for a partition it does not own too.
	commit := func(epoch int32, p int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(9)
		req.Group, req.MemberID, req.Generation = group, "kafka-member-1", epoch
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = "shared"
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = p, 0
		ct.Partitions = append(ct.Partitions, cp)
		req.Topics = append(req.Topics, ct)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	mine := kept[0].Partitions[0]
	theirs := g.GetAssigned()[0].GetPartition()
	if c := commit(kEpoch, mine); c != 0 {
		t.Fatalf("commit at the member's epoch: %v", kerr.ErrorForCode(c))
	}
	if c := commit(kEpoch-1, mine); c != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at an old epoch: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(c))
	}
	if c := commit(kEpoch, theirs); c != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit of the gRPC member's partition: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(c))
	}

	// The Kafka member leaves; the gRPC member gets everything.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = group, "kafka-member-1", -1
	if r := cgHeartbeat(t, cl, leave); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	waitFor(t, "the gRPC member's four partitions", func() bool {
		g, err = b.c.Groups().Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: group, MemberId: gID, MemberEpoch: gEpoch, Owned: g.GetAssigned()})
		if err != nil {
			t.Fatal(err)
		}
		gEpoch = g.GetMemberEpoch()
		return len(g.GetAssigned()) == 4
	})
	// A heartbeat of the member that left: UNKNOWN_MEMBER_ID.
	hb = kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = group, "kafka-member-1", kEpoch
	if r := cgHeartbeat(t, cl, hb); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after leaving: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestConsumerGroupDescribe: a KIP-848 group is described from floe's
// store (state, epoch, each member's epoch, subscription and assignment by
// topic id and name); a classic group here and an unknown group are
// GROUP_ID_NOT_FOUND.
func TestConsumerGroupDescribe(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "cgd", 3)
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.MemberEpoch, join.RebalanceTimeoutMillis = "g848", "m1", 0, 30000
	join.SubscribedTopicNames, join.Topics = []string{"cgd"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	r := cgHeartbeat(t, cl, join)
	if r.ErrorCode != 0 || assignedCount(r) != 3 {
		t.Fatalf("join: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	classic := startGroupConsumer(t, ctx, b, "classic", "cgd")
	waitFor(t, "the classic group to be stable", func() bool { return describeGroup(t, cl, "classic").State == "Stable" })

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"g848", "classic", "nobody"}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.Group != "g848" || g.State != "Stable" || g.Epoch <= 0 || g.AssignorName != "floe" || len(g.Members) != 1 {
		t.Fatalf("g848: %+v", g)
	}
	m := g.Members[0]
	if m.MemberID != "m1" || m.MemberEpoch != r.MemberEpoch || len(m.SubscribedTopics) != 1 || m.SubscribedTopics[0] != "cgd" ||
		len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "cgd" ||
		len(m.Assignment.TopicPartitions[0].Partitions) != 3 || m.Assignment.TopicPartitions[0].TopicID != r.Assignment.Topics[0].TopicID ||
		len(m.TargetAssignment.TopicPartitions) != 1 {
		t.Fatalf("member: %+v", m)
	}
	for _, g := range resp.Groups[1:] {
		if g.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("%s: code %d, want GROUP_ID_NOT_FOUND", g.Group, g.ErrorCode)
		}
	}
	cancel()
	classic.stop()
}
