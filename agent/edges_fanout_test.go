package agent_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
)

// Topics, partitions per topic and partitions in all are bounded at
// create, naming the limit. Before, 10 topics of 100,000 partitions were
// created in under a second.
func TestTopicCountLimits(t *testing.T) {
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxTopics, a.MaxPartitionsPerTopic, a.MaxTotalPartitions = 3, 10, 15
		a.MaxSubscribePartitions, a.MaxSubscribedPartitions = 10, 10
	}})
	ctx := context.Background()
	create := func(name string, n int32) error {
		_, err := s.topics.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: name, Partitions: n})
		return err
	}
	wantStatus(t, "11 partitions", create("a", 11), codes.InvalidArgument, agent.ReasonLimit, "max_partitions_per_topic")
	if err := create("a", 10); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "6 more partitions", create("b", 6), codes.ResourceExhausted, agent.ReasonLimit, "max_total_partitions")
	if err := create("b", 4); err != nil {
		t.Fatal(err)
	}
	if err := create("c", 1); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "a fourth topic", create("d", 1), codes.ResourceExhausted, agent.ReasonLimit, "max_topics")
	if _, err := s.topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := create("d", 1); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

// A group subscription honours the per-subscription partition cap (its
// session ends, naming the limit, before any reader starts), and all
// subscriptions of the agent together read at most MaxSubscribedPartitions.
// Before, one group Subscribe on a 20,000-partition topic started 20,024
// goroutines, and 40 plain subscriptions of 1,024 partitions 41,068.
func TestSubscriptionFanOutLimits(t *testing.T) {
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxSubscribePartitions, a.MaxSubscribedPartitions = 8, 12
	}})
	s.createTopic(t, "wide", 20)
	s.createTopic(t, "t", 8)
	ctx := context.Background()
	recvErr := func(req *floev1.SubscribeRequest) error {
		st, err := s.log.Subscribe(ctx, req)
		if err != nil {
			return err
		}
		for {
			m, err := st.Recv()
			if err != nil {
				return err
			}
			if len(m.GetAssignment().GetPartitions()) > 8 {
				t.Fatalf("assigned %d partitions", len(m.GetAssignment().GetPartitions()))
			}
		}
	}
	err := recvErr(&floev1.SubscribeRequest{Topic: "wide", Group: "g"})
	wantStatus(t, "a group subscription of 20 partitions", err, codes.ResourceExhausted, agent.ReasonLimit, "max_subscribe_partitions")

	// An attempt's outcome: refused (its error), or accepted (nil: no
	// answer within 300 ms, as a subscription without data has none).
	attempt := func(parts []int32) error {
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		st, err := s.log.Subscribe(actx, &floev1.SubscribeRequest{Topic: "t", Partitions: parts})
		if err == nil {
			_, err = st.Recv()
		}
		if code(err) == codes.DeadlineExceeded {
			return nil
		}
		return err
	}
	// The group session's readers (of a first, smaller assignment) stop.
	eventually(t, "no partition read", func() bool { return agent.SubscribedPartitions(s.ag) == 0 })
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first, err := s.log.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "t"}) // 8 partitions, held
	if err != nil {
		t.Fatal(err)
	}
	firstDone := make(chan error, 1)
	go func() { _, err := first.Recv(); firstDone <- err }() // waits (no data) until cancelled
	eventually(t, "the first subscription reads", func() bool { return agent.SubscribedPartitions(s.ag) == 8 })
	refused := attempt([]int32{0, 1, 2, 3, 4})
	wantStatus(t, "13 partitions subscribed", refused, codes.ResourceExhausted, agent.ReasonLimit, "max_subscribed_partitions")
	if err := attempt([]int32{0, 1, 2, 3}); err != nil {
		t.Fatalf("12 partitions subscribed: %v", err)
	}
	cancel()
	if err := <-firstDone; code(err) != codes.Canceled {
		t.Fatalf("the first subscription: %v", err)
	}
	eventually(t, "the first subscription's partitions given back", func() bool { return attempt([]int32{0, 1, 2, 3, 4, 5, 6, 7}) == nil })
}
