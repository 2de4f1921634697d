package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// groupConsumer is a kgo group member that commits after every poll.
type groupConsumer struct {
	cl   *kgo.Client
	mu   sync.Mutex // protects recs
	recs []*kgo.Record
	done chan struct{}
}

func startGroupConsumer(t *testing.T, ctx context.Context, b *broker, group, topic string) *groupConsumer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(100*time.Millisecond), kgo.SessionTimeout(3*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	gc := &groupConsumer{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(gc.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			gc.mu.Lock()
			gc.recs = append(gc.recs, recs...)
			gc.mu.Unlock()
			if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
				t.Logf("commit: %v", err) // a rebalance may fence it: the records are read again
			}
		}
	}()
	return gc
}

func (g *groupConsumer) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.recs)
}

func (g *groupConsumer) stop() {
	<-g.done
	g.cl.Close() // leaves the group
}

// waitFor polls cond every 20 ms for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKgoGroupRebalance consumes in a group of two that commits, then a
// third member joins: every record is read (none lost across the
// rebalance), the third member gets partitions, the committed positions
// reach the end and are floe's group positions (seen over gRPC).
func TestKgoGroupRebalance(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	const topic, group = "orders", "billing"
	createTopic(t, admin, topic, 6)
	first := sentRecords(topic, 300)
	produceAll(t, admin, first)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c1 := startGroupConsumer(t, ctx, b, group, topic)
	c2 := startGroupConsumer(t, ctx, b, group, topic)
	all := func() []*kgo.Record {
		var out []*kgo.Record
		for _, c := range []*groupConsumer{c1, c2} {
			c.mu.Lock()
			out = append(out, c.recs...)
			c.mu.Unlock()
		}
		return out
	}
	waitFor(t, "the first 300 records", func() bool { return len(unique(all())) >= 300 })

	c3 := startGroupConsumer(t, ctx, b, group, topic)
	waitFor(t, "three stable members", func() bool {
		d := describeGroup(t, admin, group)
		return d.State == "Stable" && len(d.Members) == 3 && assignedAll(t, d, 6)
	})
	second := make([]*kgo.Record, 300)
	for i := range second {
		second[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k2-%d", i), Value: fmt.Appendf(nil, "second %d", i), Timestamp: time.UnixMilli(1750000000000 + int64(i))}
	}
	produceAll(t, admin, second)
	all3 := func() []*kgo.Record {
		out := all()
		c3.mu.Lock()
		defer c3.mu.Unlock()
		return append(out, c3.recs...)
	}
	waitFor(t, "all 600 records", func() bool { return len(unique(all3())) >= 600 })
	if c3.count() == 0 {
		t.Fatal("the third member consumed nothing after the rebalance")
	}
	got := unique(all3())
	for _, r := range append(append([]*kgo.Record{}, first...), second...) {
		if _, ok := got[string(r.Value)]; !ok {
			t.Fatalf("record %q lost", r.Value)
		}
	}
	// Positions reach the high watermark of every partition, in floe's
	// group state.
	waitFor(t, "positions at the end", func() bool {
		resp, err := b.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: group})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, o := range resp.GetOffsets() {
			sum += o.GetOffset()
		}
		return sum == 600
	})
	cancel()
	for _, c := range []*groupConsumer{c1, c2, c3} {
		c.stop()
	}
	waitFor(t, "an empty group", func() bool {
		d := describeGroup(t, admin, group)
		return len(d.Members) == 0 && d.State == "Empty"
	})
}

// unique indexes records by value.
func unique(recs []*kgo.Record) map[string]*kgo.Record {
	out := make(map[string]*kgo.Record, len(recs))
	for _, r := range recs {
		out[string(r.Value)] = r
	}
	return out
}

func describeGroup(t *testing.T, cl *kgo.Client, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups[0]
}

// assignedAll reports whether d's members' assignments cover exactly n
// partitions, each once.
func assignedAll(t *testing.T, d kmsg.DescribeGroupsResponseGroup, n int) bool {
	t.Helper()
	seen := map[int32]bool{}
	for _, m := range d.Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			return false
		}
		for _, tp := range a.Topics {
			for _, p := range tp.Partitions {
				if seen[p] {
					t.Fatalf("partition %d assigned twice: %+v", p, d.Members)
				}
				seen[p] = true
			}
		}
	}
	return len(seen) == n
}
