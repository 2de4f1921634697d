package kafka_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP848LeaveWithEmptySubscription: the Java consumer (4.x,
// group.protocol=consumer) unsubscribes as it closes, so its leave
// heartbeat (epoch -1) carries an empty SubscribedTopicNames. The leave
// is honoured: the member is gone at once, not when its session expires
// 45 s later (the admin client polling describeConsumerGroups for an
// empty group sent ~800 requests meanwhile).
func TestKIP848LeaveWithEmptySubscription(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "leave-empty", 2)
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.MemberEpoch, join.RebalanceTimeoutMillis = "gleave", "m1", 0, 30000
	join.SubscribedTopicNames, join.Topics = []string{"leave-empty"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	r := cgHeartbeat(t, cl, join)
	if r.ErrorCode != 0 || assignedCount(r) != 2 {
		t.Fatalf("join: %+v", r)
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "gleave", "m1", -1
	leave.SubscribedTopicNames, leave.Topics = []string{}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := cgHeartbeat(t, cl, leave); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave with an empty subscription: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"gleave"}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 0 || g.State != "Empty" {
		t.Fatalf("after the leave: %+v", g)
	}

	// A member still in the group may not empty its subscription.
	join.MemberID = "m2"
	if r := cgHeartbeat(t, cl, join); r.ErrorCode != 0 {
		t.Fatalf("join m2: %v", kerr.ErrorForCode(r.ErrorCode))
	} else {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "gleave", "m2", r.MemberEpoch, []string{}
		if r := cgHeartbeat(t, cl, hb); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("an empty subscription at epoch %d: %v, want INVALID_REQUEST", hb.MemberEpoch, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}
