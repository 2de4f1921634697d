package kafka_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// A static member restarted (a new franz-go process with the same
// group.instance.id, the old one closed without leaving, as static members
// do) goes on with its partitions in the same generation: the other
// member, with the eager range assignor (every rebalance revokes all its
// partitions), sees no revocation, and records produced afterwards are
// consumed by both. Before, every restart of a static member rebalanced
// the group.
func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	const topic, group = "static-restart", "static-restart-group"
	createTopic(t, admin, topic, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var revokedB atomic.Int64
	start := func(instance string, revoked *atomic.Int64) (*kgo.Client, *atomic.Int64, chan struct{}) {
		opts := eagerMember(b, group, topic, kgo.InstanceID(instance), kgo.SessionTimeout(10*time.Second))
		if revoked != nil {
			opts = append(opts, kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { revoked.Add(1) }))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		var recs atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				recs.Add(int64(len(fs.Records())))
			}
		}()
		return cl, &recs, done
	}
	clA, _, doneA := start("instance-a", nil)
	clB, recsB, doneB := start("instance-b", &revokedB)
	t.Cleanup(func() { cancel(); <-doneB; clB.Close() })
	stable := func() (ids map[string]string) {
		d := describeGroup(t, admin, group)
		if d.State != "Stable" || len(d.Members) != 2 || !assignedAll(t, d, 4) {
			return nil
		}
		ids = map[string]string{}
		for _, m := range d.Members {
			ids[*m.InstanceID] = m.MemberID
		}
		return ids
	}
	waitFor(t, "a stable group of two", func() bool { return stable() != nil })
	produceAll(t, admin, sentRecords(topic, 40))
	waitFor(t, "b consumes", func() bool { return recsB.Load() > 0 })
	before := stable()
	revoked := revokedB.Load()

	clA.Close() // a static member: no LeaveGroup
	<-doneA
	clA2, recsA2, doneA2 := start("instance-a", nil)
	t.Cleanup(func() { cancel(); <-doneA2; clA2.Close() })
	produceAll(t, admin, sentRecords(topic, 40))
	waitFor(t, "the restarted member consumes", func() bool { return recsA2.Load() > 0 })
	after := stable()
	if after == nil || after["instance-b"] != before["instance-b"] || after["instance-a"] == before["instance-a"] {
		t.Fatalf("members before the restart %v, after %v", before, after)
	}
	if n := revokedB.Load() - revoked; n != 0 {
		t.Fatalf("the other member's partitions were revoked %d times: the restart rebalanced the group", n)
	}
}

// An OffsetCommit (v7+) naming a static member's group.instance.id with a
// member id other than the instance's is refused FENCED_INSTANCE_ID and
// commits nothing, as Apache Kafka's; the instance's own member commits.
// Before, the stale member id was taken for a KIP-848 member.
func TestStaticMemberStaleCommitFenced(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	const topic, group = "static-commit", "static-commit-group"
	createTopic(t, admin, topic, 1)
	produceAll(t, admin, sentRecords(topic, 10))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := startStaticMember(t, ctx, b, group, topic, "instance-1")
	waitFor(t, "the member consumes", func() bool { return m.recs.Load() >= 10 })
	var id string
	waitFor(t, "a stable group of one", func() bool {
		d := describeGroup(t, admin, group)
		if d.State != "Stable" || len(d.Members) != 1 {
			return false
		}
		id = d.Members[0].MemberID
		return true
	})
	commitAs := func(member, inst string, gen int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(8)
		req.Group, req.MemberID, req.InstanceID, req.Generation = group, member, &inst, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	commit := func(member string, gen int32) int16 { return commitAs(member, "instance-1", gen) }
	committedAt := func() int64 {
		offs, err := kadm.NewClient(admin).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup(topic, 0)
		return o.At
	}
	waitFor(t, "the member commits what it consumed", func() bool { return committedAt() == 10 })
	for _, gen := range []int32{0, 1, 5} {
		if code := commit("stale-"+id, gen); code != kerr.FencedInstanceID.Code {
			t.Fatalf("a stale member id's commit (generation %d): %v, want FENCED_INSTANCE_ID", gen, kerr.ErrorForCode(code))
		}
	}
	if code := commitAs(id, "instance-2", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("a commit naming an instance no member holds: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
	if at := committedAt(); at != 10 {
		t.Fatalf("committed %d after the stale member's commits, want 10", at)
	}
	own, gen := m.cl.GroupMetadata()
	if own != id {
		t.Fatalf("the member's id %q, the group's %q", own, id)
	}
	if code := commit(id, gen); code != 0 {
		t.Fatalf("the instance's own member's commit: %v", kerr.ErrorForCode(code))
	}
	if at := committedAt(); at != 3 {
		t.Fatalf("committed %d after the member's own commit, want 3", at)
	}
}

// A static member that is slow to rejoin (its revocation callback outlasts
// the rebalance timeout) stays in the group while it is away: the
// generation that forms without it still lists it and the leader assigns
// it its share, which no other member consumes meanwhile; Apache Kafka
// removes only dynamic members that miss a join. Before, the slow member
// was removed and its partitions went to the others until it came back.
// (Its return rebalances the group, as in Kafka: franz-go's subscription
// carries its generation, so its metadata has changed.)
func TestStaticMemberSlowToRejoinKeepsShare(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	const topic, group = "static-slow", "static-slow-group"
	createTopic(t, admin, topic, 6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	start := func(instance string, onRevoke func()) {
		opts := eagerMember(b, group, topic, kgo.SessionTimeout(20*time.Second), kgo.RebalanceTimeout(2*time.Second),
			kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { onRevoke() }))
		if instance != "" {
			opts = append(opts, kgo.InstanceID(instance))
		}
		pollInBackground(t, ctx, &wg, opts...)
	}
	var slow, away atomic.Bool
	start("instance-a", func() {
		if slow.CompareAndSwap(true, false) {
			away.Store(true)
			time.Sleep(6 * time.Second) // three rebalance timeouts: the join completes without it
			away.Store(false)
		}
	})
	start("instance-b", func() {})
	// stable reports a Stable group of n members, each assigned partitions.
	stable := func(n int) bool {
		d := describeGroup(t, admin, group)
		if d.State != "Stable" || len(d.Members) != n || !assignedAll(t, d, 6) {
			return false
		}
		for _, m := range d.Members {
			if len(m.MemberAssignment) == 0 {
				return false
			}
		}
		return true
	}
	waitFor(t, "a stable group of two", func() bool { return stable(2) })
	slow.Store(true)
	start("", func() {}) // a dynamic third member: every member must rejoin
	waitFor(t, "the slow member's revocation", away.Load)
	kept := false
	for away.Load() && !kept {
		kept = stable(3)
		time.Sleep(50 * time.Millisecond)
	}
	if !kept {
		t.Fatal("while the static member was away the group never stood with it assigned its share: it was removed")
	}
	waitFor(t, "a stable group of three after its return", func() bool { return !away.Load() && stable(3) })
}
