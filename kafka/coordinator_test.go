package kafka_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/kafka"
)

// TestClassicGroupAcrossAgents: two agents on one PostgreSQL and S3, two
// franz-go members of one classic group, each bootstrapped from a
// different agent, form one group: each partition is owned by exactly one
// member and every record is consumed exactly once. Then the group's
// coordinator is killed (its row left to expire): both members rejoin on
// the survivor, nothing is lost, and once stable again every record is
// consumed exactly once; the committed positions reach the end.
func TestClassicGroupAcrossAgents(t *testing.T) {
	agents := pgAgents(t, 2, func(c *kafka.Config) { c.AgentTTL = time.Second })
	a, b := agents[0], agents[1]
	const topic, group = "across", "across-group"
	admin := newClient(t, a)
	createTopic(t, admin, topic, 4)
	waitFor(t, "two brokers in Metadata", func() bool {
		return len(brokersOf(t, admin)) == 2 && len(brokersOf(t, newClient(t, b))) == 2
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c1 := startGroupConsumer(t, ctx, a, group, topic)
	c2 := startGroupConsumer(t, ctx, b, group, topic)
	stable := func(via *kgo.Client, members int) func() bool {
		return func() bool {
			d := describeGroup(t, via, group)
			return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == members && assignedAll(t, d, 4)
		}
	}
	waitFor(t, "one stable group of two", stable(admin, 2))
	// Both agents name the same coordinator.
	ca, cb := coordinatorOf(t, a, group), coordinatorOf(t, b, group)
	if ca != cb {
		t.Fatalf("agent A names coordinator %d, agent B %d", ca, cb)
	}

	phase := func(name string, n int) []*kgo.Record {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "%s-%d", name, i), Value: fmt.Appendf(nil, "%s %d", name, i)}
		}
		return recs
	}
	consumed := func() map[string]int {
		out := map[string]int{}
		for _, c := range []*groupConsumer{c1, c2} {
			c.mu.Lock()
			for _, r := range c.recs {
				out[string(r.Value)]++
			}
			c.mu.Unlock()
		}
		return out
	}
	exactlyOnce := func(recs []*kgo.Record) {
		t.Helper()
		waitFor(t, "every record consumed", func() bool {
			got := consumed()
			for _, r := range recs {
				if got[string(r.Value)] == 0 {
					return false
				}
			}
			return true
		})
		got := consumed()
		for _, r := range recs {
			if n := got[string(r.Value)]; n != 1 {
				t.Fatalf("record %q consumed %d times", r.Value, n)
			}
		}
	}
	first := phase("first", 400)
	produceAll(t, admin, first)
	exactlyOnce(first)
	if c1.count() == 0 || c2.count() == 0 {
		t.Fatalf("one member consumed nothing: %d and %d", c1.count(), c2.count())
	}

	// Kill the coordinator; the survivor takes the group over.
	dead, alive := a, b
	if ca == nodeOf(t, b) {
		dead, alive = b, a
	}
	dead.kill()
	survivor := newClient(t, alive)
	second := phase("second", 400)
	produceAll(t, survivor, second)
	waitFor(t, "every record of the second phase consumed", func() bool {
		got := consumed()
		for _, r := range second {
			if got[string(r.Value)] == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, "one stable group of two on the survivor", stable(survivor, 2))
	third := phase("third", 400)
	produceAll(t, survivor, third)
	exactlyOnce(third)
	waitFor(t, "positions at the end", func() bool {
		resp, err := alive.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: group})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, o := range resp.GetOffsets() {
			sum += o.GetOffset()
		}
		return sum == 1200
	})
	cancel()
	c1.stop()
	c2.stop()
}

func brokersOf(t *testing.T, cl *kgo.Client) []kmsg.MetadataResponseBroker {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Brokers
}

// coordinatorOf is the node id agent b's own FindCoordinator names for
// group (asked of b's seed connection, not any broker).
func coordinatorOf(t *testing.T, b *broker, group string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
	kr, err := newClient(t, b).SeedBrokers()[0].Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kr.(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) == 1 {
		return resp.Coordinators[0].NodeID
	}
	return resp.NodeID
}

// nodeOf is agent b's node id, as Metadata lists it at b's address.
func nodeOf(t *testing.T, b *broker) int32 {
	t.Helper()
	for _, mb := range brokersOf(t, newClient(t, b)) {
		if net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port))) == b.addr {
			return mb.NodeID
		}
	}
	t.Fatalf("agent %s not among the brokers", b.addr)
	return 0
}
