package kafka_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// staticMember is a franz-go group member with a group.instance.id that
// counts the records it polls and whether it was told it is fenced.
type staticMember struct {
	cl     *kgo.Client
	recs   atomic.Int64
	fenced atomic.Bool
	done   chan struct{}
}

func startStaticMember(t *testing.T, ctx context.Context, b *broker, group, topic, instance string) *staticMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.InstanceID(instance), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.HeartbeatInterval(100*time.Millisecond), kgo.SessionTimeout(3*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	m := &staticMember{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(_ string, _ int32, err error) {
				if errors.Is(err, kerr.FencedInstanceID) {
					m.fenced.Store(true)
				}
			})
			m.recs.Add(int64(len(fs.Records())))
		}
	}()
	t.Cleanup(func() { <-m.done; cl.Close() })
	return m
}

// Two franz-go processes started with one group.instance.id: the second
// takes the instance over, the first is told FENCED_INSTANCE_ID (Apache
// Kafka's answer) and stays out; the group stays stable with one member
// whose id does not change. Before, the first one's rejoin with its old
// member id took the instance back, and the two fenced each other in a
// loop of rebalances.
func TestStaticMemberSharedInstanceID(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	const topic, group = "static", "static-group"
	createTopic(t, admin, topic, 2)
	produceAll(t, admin, sentRecords(topic, 50))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	first := startStaticMember(t, ctx, b, group, topic, "instance-1")
	waitFor(t, "the first member consumes", func() bool { return first.recs.Load() >= 50 })
	second := startStaticMember(t, ctx, b, group, topic, "instance-1")
	waitFor(t, "the first member fenced", first.fenced.Load)

	holder := func() string {
		d := describeGroup(t, admin, group)
		if d.State != "Stable" || len(d.Members) != 1 || !assignedAll(t, d, 2) {
			return ""
		}
		return d.Members[0].MemberID
	}
	waitFor(t, "a stable group of one", func() bool { return holder() != "" })
	id := holder()
	for range 20 { // 2 s: a loop of takeovers would change the holder
		time.Sleep(100 * time.Millisecond)
		if h := holder(); h != id {
			t.Fatalf("the instance's member changed from %q to %q: the two processes fence each other", id, h)
		}
	}
	produceAll(t, admin, sentRecords(topic, 50))
	waitFor(t, "the second member consumes", func() bool { return second.recs.Load() >= 50 })
	if second.fenced.Load() {
		t.Fatal("the member that took the instance over was fenced")
	}
}
