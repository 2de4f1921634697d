package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// groupBackends opens a fresh metadata store per backend: SQLite in
// process, PostgreSQL from testenv. open may be called several times (one
// store per agent) and returns stores of one database.
func groupBackends(t *testing.T) map[string]func(t *testing.T) metadata.Store {
	return map[string]func(t *testing.T) metadata.Store{
		"sqlite": func(t *testing.T) metadata.Store {
			path := filepath.Join(t.TempDir(), "meta.db")
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) metadata.Store { return openPostgres(t, testenv.Postgres(t)) },
	}
}

// killableNode is an agent whose gRPC server and batcher can be stopped
// mid-test (kill), as when its process dies.
type killableNode struct {
	c    *client.Client
	ag   *agent.Agent
	kill func()
}

func startKillable(t testing.TB, meta metadata.Store, store objectstore.Store, acfg agent.Config, opts ...agent.Options) *killableNode {
	t.Helper()
	o := agenttest.Options{Agent: acfg, Batcher: batcher.DefaultConfig()}
	o.Batcher.Linger = 2 * time.Millisecond
	if len(opts) > 0 {
		o.AgentOptions = opts[0]
	}
	a := agenttest.Start(t, meta, store, o)
	return &killableNode{c: a.Client, ag: a.Agent, kill: a.Kill}
}

func groupConfig() agent.Config {
	acfg := agent.DefaultConfig()
	acfg.PollInterval = 200 * time.Millisecond
	return acfg
}

// ownership checks, across the consumers of one group, that a partition
// has at most one owner at any instant and that records are handed only
// to the partition's owner. Consumers report through OnAssign (before they
// commit revoked partitions, so before the next owner can get them).
type ownership struct {
	t  *testing.T
	mu sync.Mutex // protects everything below
	// owner is the consumer holding each partition.
	owner map[int32]string
	// seen counts deliveries per (partition, offset).
	seen map[[2]int64]int
}

func newOwnership(t *testing.T) *ownership {
	return &ownership{t: t, owner: map[int32]string{}, seen: map[[2]int64]int{}}
}

func (o *ownership) assign(who string, assigned map[int32]*floev1.AssignedPartition, revoked []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range revoked {
		if o.owner[p] == who {
			delete(o.owner, p)
		}
	}
	for p := range assigned {
		if cur, ok := o.owner[p]; ok && cur != who {
			o.t.Errorf("partition %d assigned to %s while %s owns it", p, who, cur)
		}
		o.owner[p] = who
	}
}

// drop forgets who's partitions (it is being killed or closed).
func (o *ownership) drop(who string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, w := range o.owner {
		if w == who {
			delete(o.owner, p)
		}
	}
}

func (o *ownership) record(who string, r *floev1.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner[r.GetPartition()] != who {
		o.t.Errorf("%s got record %d/%d but %q owns the partition", who, r.GetPartition(), r.GetOffset(), o.owner[r.GetPartition()])
	}
	o.seen[[2]int64{int64(r.GetPartition()), r.GetOffset()}]++
}

func (o *ownership) counts() (distinct, dups int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.seen {
		distinct++
		dups += n - 1
	}
	return
}

// member is one consumer goroutine of a group test.
type member struct {
	name   string
	cancel context.CancelFunc
	close  chan struct{} // closed: commit and leave cleanly
	done   chan error
}

func startMember(ctx context.Context, t *testing.T, name string, clients []*client.Client, own *ownership, group, topic string) *member {
	ctx, cancel := context.WithCancel(ctx)
	m := &member{name: name, cancel: cancel, close: make(chan struct{}), done: make(chan error, 1)}
	g, err := client.NewGroupConsumer(clients, client.GroupOptions{Group: group, Topic: topic, Earliest: true,
		SessionTimeout: 3 * time.Second, CommitInterval: 200 * time.Millisecond,
		Resume:   client.ResumeOptions{MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
		OnAssign: func(a map[int32]*floev1.AssignedPartition, r []int32) { own.assign(name, a, r) }})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		for {
			select {
			case <-m.close:
				own.drop(name)
				cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
				m.done <- g.Close(cctx)
				ccancel()
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
			rec, err := g.Poll(pctx)
			pcancel()
			if ctx.Err() != nil {
				g.Abort()
				m.done <- nil // killed: no commit, no leave from the client
				return
			}
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			if err != nil {
				m.done <- fmt.Errorf("%s: %w", name, err)
				return
			}
			if rec != nil {
				own.record(name, rec)
			}
		}
	}()
	return m
}

// kill ends the member without a commit or a leave of its own.
func (m *member) kill(own *ownership) error {
	own.drop(m.name)
	m.cancel()
	return <-m.done
}

func (m *member) leave() error {
	close(m.close)
	return <-m.done
}

// Members join, leave and are killed at random while records are
// produced; at every instant a partition has at most one owner and
// records go only to it; once the churn stops every record is consumed.
// Without kills (the last phase) nothing is delivered twice.
func TestGroupChurn(t *testing.T) {
	for name, open := range groupBackends(t) {
		t.Run(name, func(t *testing.T) {
			meta := open(t)
			n := startKillable(t, meta, objectstore.NewMemory(), groupConfig())
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const parts = 6
			if _, err := n.c.CreateTopic(ctx, "churn", parts, nil); err != nil {
				t.Fatal(err)
			}
			own := newOwnership(t)
			produced := 0
			produce := func(k int) {
				for i := 0; i < k; i++ {
					p := int32(produced % parts)
					if _, err := n.c.Produce(ctx, "churn", p, client.Value(nil, []byte(fmt.Sprint(produced)))); err != nil {
						t.Fatal(err)
					}
					produced++
				}
			}
			clients := []*client.Client{n.c}
			var live []*member
			next := 0
			join := func() {
				live = append(live, startMember(ctx, t, fmt.Sprintf("m%d", next), clients, own, "g", "churn"))
				next++
			}
			join()
			join()
			rng := rand.New(rand.NewPCG(7, 7))
			kills := 0
			for round := 0; round < 8; round++ {
				produce(30)
				time.Sleep(300 * time.Millisecond)
				switch op := rng.IntN(3); {
				case op == 0 || len(live) < 2:
					join()
				case op == 1:
					i := rng.IntN(len(live))
					if err := live[i].leave(); err != nil {
						t.Fatal(err)
					}
					live = append(live[:i], live[i+1:]...)
				default:
					i := rng.IntN(len(live))
					if err := live[i].kill(own); err != nil {
						t.Fatal(err)
					}
					kills++
					live = append(live[:i], live[i+1:]...)
				}
			}
			_, dupsBefore := own.counts()
			// Last phase: only joins and clean leaves.
			join()
			produce(60)
			if err := live[0].leave(); err != nil {
				t.Fatal(err)
			}
			live = live[1:]
			produce(60)
			deadline := time.Now().Add(20 * time.Second)
			for {
				distinct, _ := own.counts()
				if distinct == produced {
					break
				}
				if time.Now().After(deadline) {
					d, err := n.c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "g"})
					t.Fatalf("%d of %d records consumed; group %v %v", distinct, produced, d, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			waitStable(ctx, t, n.c, "g", len(live))
			_, dups := own.counts()
			t.Logf("%s: %d records, %d kills, %d duplicates during kills, %d after", name, produced, kills, dupsBefore, dups-dupsBefore)
			if dups != dupsBefore {
				t.Errorf("%d records delivered twice without any kill", dups-dupsBefore)
			}
			for _, m := range live {
				if err := m.leave(); err != nil {
					t.Fatal(err)
				}
			}
			// Every position is committed at the high watermark.
			d, err := n.c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "g"})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.GetPartitions()) != parts {
				t.Fatalf("positions of %d partitions, want %d", len(d.GetPartitions()), parts)
			}
			for _, p := range d.GetPartitions() {
				if p.GetLagRecords() != 0 {
					t.Errorf("partition %d: committed %d, high watermark %d", p.GetPartition(), p.GetCommitted(), p.GetHighWatermark())
				}
			}
		})
	}
}

// waitStable waits for the group to be stable with n members, every
// partition owned.
func waitStable(ctx context.Context, t *testing.T, c *client.Client, group string, n int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		d, err := c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: group})
		if err != nil && code(err) != codes.NotFound {
			t.Fatal(err)
		}
		if d.GetState() == string(metadata.GroupStable) && len(d.GetMembers()) == n {
			return time.Since(start)
		}
		if ctx.Err() != nil || time.Since(start) > 20*time.Second {
			t.Fatalf("group %s not stable with %d members: %v", group, n, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A commit with a stale member epoch through the API is FailedPrecondition
// with reason STALE_MEMBER_EPOCH; an unknown member UNKNOWN_MEMBER_ID.
func TestGroupStaleEpochCommit(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	g := h.c.Groups()
	a, err := g.Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "g", Subscription: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.GetAssigned()) != 2 {
		t.Fatalf("a lone member got %v", a.GetAssigned())
	}
	commit := func(member string, epoch int32) error {
		_, err := g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g", MemberId: member, MemberEpoch: epoch,
			Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: 0}}})
		return err
	}
	if err := commit(a.GetMemberId(), a.GetMemberEpoch()); err != nil {
		t.Fatal(err)
	}
	// A second member bumps the group epoch; a's old epoch goes stale once
	// a has reconciled.
	if _, err := g.Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "g", Subscription: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	var owned []*floev1.TopicPartition
	epoch := a.GetMemberEpoch()
	for range 3 {
		r, err := g.Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "g", MemberId: a.GetMemberId(), MemberEpoch: epoch, Owned: owned})
		if err != nil {
			t.Fatal(err)
		}
		owned, epoch = r.GetAssigned(), r.GetMemberEpoch()
	}
	if epoch == a.GetMemberEpoch() {
		t.Fatalf("member epoch still %d after a rebalance", epoch)
	}
	err = commit(a.GetMemberId(), a.GetMemberEpoch())
	if code(err) != codes.FailedPrecondition || client.GroupErrorReason(err) != agent.ReasonStaleMemberEpoch {
		t.Fatalf("stale commit: %v (reason %q)", err, client.GroupErrorReason(err))
	}
	err = commit("nobody", 1)
	if code(err) != codes.FailedPrecondition || client.GroupErrorReason(err) != agent.ReasonUnknownMember {
		t.Fatalf("unknown member commit: %v (reason %q)", err, client.GroupErrorReason(err))
	}
	_, err = g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g", MemberId: a.GetMemberId(), MemberEpoch: epoch,
		Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: -1}}})
	if code(err) != codes.InvalidArgument {
		t.Fatalf("negative offset: %v", err)
	}
	_, err = g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "", Offsets: []*floev1.OffsetCommit{{Topic: "t"}}})
	if code(err) != codes.InvalidArgument {
		t.Fatalf("empty group: %v", err)
	}
	_, err = g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g", MemberId: a.GetMemberId(), MemberEpoch: epoch,
		Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1, Metadata: strings.Repeat("m", 5000)}}})
	if code(err) != codes.InvalidArgument {
		t.Fatalf("5000 bytes of metadata: %v", err)
	}
	_, err = g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g", MemberId: a.GetMemberId(), MemberEpoch: epoch,
		Offsets: []*floev1.OffsetCommit{{Topic: "nope", Partition: 0, Offset: 1}}})
	if code(err) != codes.NotFound {
		t.Fatalf("unknown topic: %v", err)
	}
	// A group subscription takes no partitions and only earliest or latest.
	for _, req := range []*floev1.SubscribeRequest{
		{Topic: "t", Group: "g2", Partitions: []int32{0}},
		{Topic: "t", Group: "g2", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Offset{Offset: 3}}},
		{Topic: "t", Group: "g2", SessionTimeoutMs: -1},
		{Topic: "t", MemberId: "m"},
	} {
		err := h.c.Subscribe(ctx, req, func(*floev1.SubscribeResponse) error { return nil })
		if code(err) != codes.InvalidArgument {
			t.Errorf("subscribe %v: %v, want InvalidArgument", req, err)
		}
	}
}

// A reset to a timestamp makes the next group subscription start at the
// first record at or after it; the dry run changes nothing.
func TestGroupResetToTimestamp(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := h.c.Produce(ctx, "t", 0, &floev1.Record{Value: []byte(fmt.Sprint(i)), TimestampMs: 1_000_000 + int64(i)*1000}); err != nil {
			t.Fatal(err)
		}
	}
	g := h.c.Groups()
	if _, err := g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g",
		Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: 10}}}); err != nil {
		t.Fatal(err)
	}
	req := &floev1.ResetOffsetsRequest{Group: "g", Topics: []string{"t"}, Spec: floev1.ResetSpec_RESET_SPEC_TIMESTAMP,
		TimestampMs: 1_000_000 + 3500, DryRun: true}
	plan, err := g.ResetOffsets(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.GetPlan()) != 1 || plan.GetPlan()[0].GetPrevious() != 10 || plan.GetPlan()[0].GetNew() != 4 {
		t.Fatalf("plan %v, want 10 -> 4", plan.GetPlan())
	}
	if o, err := g.FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "g"}); err != nil || o.GetOffsets()[0].GetOffset() != 10 {
		t.Fatalf("after a dry run: %v %v", o, err)
	}
	req.DryRun = false
	if _, err := g.ResetOffsets(ctx, req); err != nil {
		t.Fatal(err)
	}
	gc, err := client.NewGroupConsumer([]*client.Client{h.c}, client.GroupOptions{Group: "g", Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close(ctx)
	for {
		rec, err := gc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rec != nil {
			if rec.GetOffset() != 4 || rec.GetTimestampMs() != 1_004_000 {
				t.Fatalf("first record %d at %d, want offset 4 at 1004000", rec.GetOffset(), rec.GetTimestampMs())
			}
			break
		}
	}
	// Live members refuse a reset without force.
	_, err = g.ResetOffsets(ctx, &floev1.ResetOffsetsRequest{Group: "g", Spec: floev1.ResetSpec_RESET_SPEC_EARLIEST})
	if code(err) != codes.FailedPrecondition || client.GroupErrorReason(err) != agent.ReasonGroupNotEmpty {
		t.Fatalf("reset with a live member: %v", err)
	}
}

// A group consumer commits only what Poll handed over: explicitly, on its
// interval (before handing the next record, so never the record being
// handed), and on Close; the next member starts right after.
func TestGroupCommitsOnlyHandedRecords(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	var recs []*floev1.Record
	for i := range 10 {
		recs = append(recs, client.Value(nil, []byte(fmt.Sprint(i))))
	}
	if _, err := h.c.Produce(ctx, "t", 0, recs...); err != nil { // one batch, one streamed message
		t.Fatal(err)
	}
	committed := func() int64 {
		o, err := h.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "g"})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.GetOffsets()) == 0 {
			return -1
		}
		return o.GetOffsets()[0].GetOffset()
	}
	g, err := client.NewGroupConsumer([]*client.Client{h.c}, client.GroupOptions{Group: "g", Topic: "t", Earliest: true,
		CommitInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	poll := func() *floev1.Record {
		for {
			r, err := g.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				return r
			}
		}
	}
	for range 3 {
		poll()
	}
	if err := g.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if c := committed(); c != 3 {
		t.Fatalf("committed %d after 3 records handed, want 3", c)
	}
	poll()
	time.Sleep(400 * time.Millisecond)
	if r := poll(); r.GetOffset() != 4 {
		t.Fatalf("got offset %d, want 4", r.GetOffset())
	}
	// The interval passed: the commit before handing offset 4 covers 0..3.
	if c := committed(); c != 4 {
		t.Fatalf("committed %d by the interval, want 4 (not the record being handed)", c)
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if c := committed(); c != 5 {
		t.Fatalf("committed %d after Close, want 5", c)
	}
	g2, err := client.NewGroupConsumer([]*client.Client{h.c}, client.GroupOptions{Group: "g", Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Abort()
	for {
		r, err := g2.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			if r.GetOffset() != 5 {
				t.Fatalf("the next member starts at %d, want 5", r.GetOffset())
			}
			break
		}
	}
}

// Close commits even when the member's epoch moved while the application
// was not polling (a rebalance it has not read yet): the commit refused as
// stale is retried once the stream brings the new epoch.
func TestGroupCloseAfterEpochMoved(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if _, err := h.c.Produce(ctx, "t", p, client.Value(nil, []byte("a")), client.Value(nil, []byte("b"))); err != nil {
			t.Fatal(err)
		}
	}
	opts := client.GroupOptions{Group: "g", Topic: "t", Earliest: true, SessionTimeout: 3 * time.Second}
	a, err := client.NewGroupConsumer([]*client.Client{h.c}, opts)
	if err != nil {
		t.Fatal(err)
	}
	handed := map[int32]int64{}
	for len(handed) < 2 || handed[0] < 2 || handed[1] < 2 {
		r, err := a.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			handed[r.GetPartition()] = r.GetOffset() + 1
		}
	}
	epoch := a.MemberEpoch()
	b, err := client.NewGroupConsumer([]*client.Client{h.c}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	go func() { // b polls until the test ends
		for ctx.Err() == nil {
			if _, err := b.Poll(ctx); err != nil {
				return
			}
		}
	}()
	// a does not poll: the agent releases its revoked partition after the
	// revoke wait, and a's epoch moves on without a knowing.
	waitStable(ctx, t, h.c, "g", 2)
	if a.MemberEpoch() != epoch {
		t.Fatal("a learnt its epoch without polling")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("close after the epoch moved: %v", err)
	}
	// The partition a kept is committed at what a was handed. (The one
	// moved to b was released after the revoke wait without a commit: a
	// did not poll; b reads it again, at least once.)
	kept := a.Assignment()
	if len(kept) != 1 {
		t.Fatalf("a kept %v, want one partition", kept)
	}
	o, err := h.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range o.GetOffsets() {
		if _, ok := kept[c.GetPartition()]; ok {
			found = true
			if c.GetOffset() != 2 {
				t.Errorf("partition %d committed at %d, want 2", c.GetPartition(), c.GetOffset())
			}
		}
	}
	if !found {
		t.Fatalf("no position for a's partition: %v", o.GetOffsets())
	}
	cancel()
}
