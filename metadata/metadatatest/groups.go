package metadatatest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// groupTests are the consumer-group conformance tests (registered in Run).
var groupTests = []struct {
	name string
	fn   func(t *testing.T, s metadata.Store)
}{
	{"GroupChurn", testGroupChurn},
	{"GroupConcurrent", testGroupConcurrent},
	{"GroupJoinLeave", testGroupJoinLeave},
	{"GroupTopicChanges", testGroupTopicChanges},
	{"GroupCommitFencing", testGroupCommitFencing},
	{"GroupSimpleCommit", testGroupSimpleCommit},
	{"GroupResetAndCopy", testGroupResetAndCopy},
	{"GroupDelete", testGroupDelete},
	{"GroupDeleteOffsets", testGroupDeleteOffsets},
	{"GroupLagInputs", testGroupLagInputs},
	{"GroupValidation", testGroupValidation},
	{"GroupExpiredMember", testGroupExpiredMember},       // groups_liveness.go
	{"GroupRevocationExpiry", testGroupRevocationExpiry}, // groups_liveness.go
	{"GroupLateLeave", testGroupLateLeave},               // groups_liveness.go
	{"GroupTopLag", testGroupTopLag},                     // groups_lag.go
	{"GroupExpire", testGroupExpire},                     // groups_lag.go
}

type tp = metadata.TopicPartition

// client models a group member: what it holds (reads and may commit) and
// its protocol state. A client releases a revoked partition at once or,
// when slow, one heartbeat later.
type client struct {
	id    string
	epoch int32
	held  map[tp]bool
	slow  bool
	dead  bool // killed: no more heartbeats, holds nothing
}

func (c *client) owned() []tp {
	out := make([]tp, 0, len(c.held))
	for p := range c.held {
		out = append(out, p)
	}
	return out
}

// beat heartbeats and applies the answer as a client would.
func (c *client) beat(t *testing.T, s metadata.Store, grp string, timeout time.Duration) error {
	t.Helper()
	resp, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: grp, MemberID: c.id, MemberEpoch: c.epoch,
		Subscription: []string{"churn-a", "churn-b"}, Owned: c.owned(), SessionTimeout: timeout})
	if err != nil {
		return err
	}
	c.id, c.epoch = resp.MemberID, resp.MemberEpoch
	next := map[tp]bool{}
	for _, p := range resp.Assigned {
		next[p] = true
	}
	if c.slow {
		// Keep revoked partitions one more heartbeat (still processing).
		for p := range c.held {
			if !next[p] {
				next[p] = true
				c.slow = false
			}
		}
	} else {
		c.slow = rand.IntN(2) == 0
	}
	c.held = next
	return nil
}

// checkDisjoint fails if two live clients hold one partition.
func checkDisjoint(t *testing.T, clients []*client, when string) {
	t.Helper()
	seen := map[tp]string{}
	for _, c := range clients {
		if c.dead {
			continue
		}
		for p := range c.held {
			if o, dup := seen[p]; dup {
				t.Fatalf("%s: partition %v held by %s and %s", when, p, o, c.id)
			}
			seen[p] = c.id
		}
	}
}

// checkServerDisjoint fails if the store lists a partition for two members.
func checkServerDisjoint(t *testing.T, s metadata.Store, grp string) metadata.GroupDescription {
	t.Helper()
	d, err := s.DescribeGroup(ctx(t), grp)
	if err != nil {
		t.Fatalf("DescribeGroup: %v", err)
	}
	seen := map[tp]string{}
	for _, m := range d.Members {
		for _, p := range append(slices.Clone(m.Assigned), m.Revoking...) {
			if o, dup := seen[p]; dup {
				t.Fatalf("store: partition %v with %s and %s", p, o, m.MemberID)
			}
			seen[p] = m.MemberID
		}
	}
	return d
}

func testGroupChurn(t *testing.T, s metadata.Store) {
	a := createTopic(t, s, "churn-a", 12)
	b := createTopic(t, s, "churn-b", 5)
	var all []tp
	for _, tpc := range []metadata.Topic{a, b} {
		for p := range tpc.Partitions {
			all = append(all, tp{TopicID: tpc.ID, Partition: p})
		}
	}
	// A short session, so that killed members expire within the run. On
	// a loaded machine a live member may go unheard that long (a slow
	// round of heartbeats), and the store then rightly expires it: such a
	// run proves nothing and is run again, on a new group, with a session
	// twice as long.
	const attempts = 4
	timeout := 1500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		unheard := groupChurn(t, s, fmt.Sprintf("churn-%d", attempt), all, timeout)
		if unheard == 0 {
			return
		}
		if attempt == attempts {
			t.Fatalf("a live member went unheard for %v of a %v session in each of %d runs", unheard, timeout, attempts)
		}
		t.Logf("run %d: a live member went unheard for %v of a %v session; again with %v", attempt, unheard, timeout, 2*timeout)
		timeout *= 2
	}
}

// groupChurn runs members of grp that join, leave and die at random,
// with the session timeout, and checks that no partition is ever held
// twice and that the group ends stable with every partition of all held
// once. It returns 0, or, for a run that proves nothing, how long a live
// member went unheard (as long as the session timeout, near enough: the
// store may have expired it, and a check could fail on that alone).
func groupChurn(t *testing.T, s metadata.Store, grp string, all []tp, timeout time.Duration) time.Duration {
	var clients []*client
	// sent is when a live member's last heartbeat was sent: the store
	// heard it later, so no live member can have expired while every
	// one's is within the timeout. The margin covers clock granularity.
	sent := map[*client]time.Time{}
	limit := timeout * 9 / 10
	// beat heartbeats c; a heartbeat after too long unheard (answered or
	// not: the store may have expired c meanwhile) ends the run.
	beat := func(c *client) (time.Duration, error) {
		since := time.Since(sent[c])
		sent[c] = time.Now()
		err := c.beat(t, s, grp, timeout)
		if since >= limit {
			return since, nil
		}
		return 0, err
	}
	live := func() []*client {
		var l []*client
		for _, c := range clients {
			if !c.dead {
				l = append(l, c)
			}
		}
		return l
	}
	// unheard is how long the longest-unheard live member has been, when
	// it may have expired, else 0.
	unheard := func() time.Duration {
		for _, c := range live() {
			if d := time.Since(sent[c]); d >= limit {
				return d
			}
		}
		return 0
	}
	join := func() {
		c := &client{held: map[tp]bool{}}
		sent[c] = time.Now()
		if err := c.beat(t, s, grp, timeout); err != nil {
			t.Fatalf("join: %v", err)
		}
		clients = append(clients, c)
	}
	for range 3 {
		join()
	}
	kills := 0
	for round := range 160 {
		l := live()
		rand.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		for _, c := range l {
			if d, err := beat(c); d > 0 {
				return d
			} else if err != nil {
				t.Fatalf("round %d: heartbeat of %s: %v", round, c.id, err)
			}
			if d := unheard(); d > 0 {
				return d
			}
			checkDisjoint(t, clients, fmt.Sprintf("round %d after %s", round, c.id))
		}
		if d := unheard(); d > 0 {
			return d
		}
		checkServerDisjoint(t, s, grp)
		switch r := rand.IntN(10); {
		case r == 0 && len(l) < 7:
			join()
		case r == 1 && len(l) > 1:
			// Leave: the client releases everything, then says so.
			c := l[0]
			if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: grp, MemberID: c.id,
				MemberEpoch: metadata.LeaveEpoch}); err != nil {
				t.Fatalf("leave: %v", err)
			}
			c.dead, c.held = true, nil
		case r == 2 && len(l) > 1 && kills < 3 && round < 100:
			l[0].dead, l[0].held = true, nil // killed: its session will expire
			kills++
		}
		time.Sleep(10 * time.Millisecond)
	}
	// No more churn: heartbeat until stable (killed members expire within
	// a session timeout). Not stable after three session timeouts and 20
	// rounds of heartbeats (a loaded machine's rounds are slow) fails.
	start := time.Now()
	for rounds := 1; ; rounds++ {
		for _, c := range live() {
			if d, err := beat(c); d > 0 {
				return d
			} else if err != nil {
				t.Fatalf("settling: %v", err)
			}
			if d := unheard(); d > 0 {
				return d
			}
			checkDisjoint(t, clients, "settling")
		}
		if d := unheard(); d > 0 {
			return d
		}
		d := checkServerDisjoint(t, s, grp)
		if d.State == metadata.GroupStable && sameMembers(d.Members, live()) {
			break
		}
		if time.Since(start) > 3*timeout && rounds >= 20 {
			t.Fatalf("not stable after %v and %d rounds: %+v", time.Since(start), rounds, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	owners := map[tp]int{}
	lo, hi := len(all), 0
	for _, c := range live() {
		for p := range c.held {
			owners[p]++
		}
		lo, hi = min(lo, len(c.held)), max(hi, len(c.held))
	}
	for _, p := range all {
		if owners[p] != 1 {
			t.Errorf("stable: partition %v owned %d times", p, owners[p])
		}
	}
	if len(owners) != len(all) || hi-lo > 1 {
		t.Errorf("stable: %d partitions owned (want %d), loads %d..%d", len(owners), len(all), lo, hi)
	}
	t.Logf("%d kills, %d members at the end, session %v", kills, len(live()), timeout)
	return 0
}

// sameMembers reports whether the group's members are the live clients:
// as many is not enough, a killed member that has not expired yet may
// stand in for a live one the store has not counted.
func sameMembers(ms []metadata.GroupMember, live []*client) bool {
	if len(ms) != len(live) {
		return false
	}
	ids := map[string]bool{}
	for _, m := range ms {
		ids[m.MemberID] = true
	}
	for _, c := range live {
		if !ids[c.id] {
			return false
		}
	}
	return true
}

func testGroupJoinLeave(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "jl", 4)
	hb := func(req metadata.HeartbeatRequest) metadata.HeartbeatResponse {
		t.Helper()
		req.Group = "jl"
		resp, err := s.Heartbeat(ctx(t), req)
		if err != nil {
			t.Fatalf("Heartbeat(%+v): %v", req, err)
		}
		return resp
	}
	a := hb(metadata.HeartbeatRequest{Subscription: []string{"jl"}})
	if a.MemberID == "" || a.MemberEpoch < 1 || len(a.Assigned) != 4 || a.HeartbeatInterval <= 0 {
		t.Fatalf("first join: %+v", a)
	}
	b := hb(metadata.HeartbeatRequest{MemberID: "b", Subscription: []string{"jl"}})
	if b.MemberID != "b" || len(b.Assigned) != 0 || b.Pending != 2 {
		t.Fatalf("second join: %+v, want nothing yet and 2 pending", b)
	}
	// a still owns all four: it is told to keep two.
	a2 := hb(metadata.HeartbeatRequest{MemberID: a.MemberID, MemberEpoch: a.MemberEpoch, Owned: a.Assigned})
	if len(a2.Assigned) != 2 || a2.MemberEpoch != a.MemberEpoch {
		t.Fatalf("a after join: %+v, want 2 assigned and epoch %d until it releases", a2, a.MemberEpoch)
	}
	// b still waits: a has not released.
	if b2 := hb(metadata.HeartbeatRequest{MemberID: "b", MemberEpoch: b.MemberEpoch}); len(b2.Assigned) != 0 {
		t.Fatalf("b got %v before a released", b2.Assigned)
	}
	// a releases; it takes the group epoch; then b gets its two.
	a3 := hb(metadata.HeartbeatRequest{MemberID: a.MemberID, MemberEpoch: a2.MemberEpoch, Owned: a2.Assigned})
	if a3.MemberEpoch != a3.GroupEpoch {
		t.Fatalf("a after release: %+v, want the group epoch", a3)
	}
	b3 := hb(metadata.HeartbeatRequest{MemberID: "b", MemberEpoch: b.MemberEpoch})
	if len(b3.Assigned) != 2 || b3.Pending != 0 {
		t.Fatalf("b after release: %+v", b3)
	}
	d, err := s.DescribeGroup(ctx(t), "jl")
	if err != nil || d.State != metadata.GroupStable || len(d.Members) != 2 {
		t.Fatalf("DescribeGroup: %+v, %v", d, err)
	}
	// A stale heartbeat and an unknown member.
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "jl", MemberID: "b", MemberEpoch: b3.MemberEpoch + 5}); !errors.Is(err, metadata.ErrStaleMemberEpoch) {
		t.Errorf("stale epoch heartbeat: %v", err)
	}
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "jl", MemberID: "zz", MemberEpoch: 3}); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("unknown member heartbeat: %v", err)
	}
	// b leaves: a gets everything back.
	if l := hb(metadata.HeartbeatRequest{MemberID: "b", MemberEpoch: metadata.LeaveEpoch}); l.MemberEpoch != metadata.LeaveEpoch {
		t.Fatalf("leave: %+v", l)
	}
	a4 := hb(metadata.HeartbeatRequest{MemberID: a.MemberID, MemberEpoch: a3.MemberEpoch, Owned: a3.Assigned})
	if len(a4.Assigned) != 4 || a4.Assigned[0].TopicID != tpc.ID {
		t.Fatalf("a after b left: %+v", a4)
	}
}

// joinStable joins member id alone on topic and heartbeats once more.
func joinStable(t *testing.T, s metadata.Store, grp, id, topic string) metadata.HeartbeatResponse {
	t.Helper()
	r, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: grp, MemberID: id, Subscription: []string{topic}})
	if err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	return r
}

func testGroupCommitFencing(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "fence", 2)
	a := joinStable(t, s, "fence", "a", "fence")
	ok := metadata.CommitOffsetsRequest{Group: "fence", MemberID: "a", MemberEpoch: a.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 0, Metadata: "m"}}}
	if err := s.CommitOffsets(ctx(t), ok); err != nil {
		t.Fatalf("owner commit: %v", err)
	}
	// b joins: a must release partition 1 (sticky: which one moves is the assignor's choice).
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "fence", MemberID: "b", Subscription: []string{"fence"}}); err != nil {
		t.Fatal(err)
	}
	a2, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "fence", MemberID: "a", MemberEpoch: a.MemberEpoch, Owned: a.Assigned})
	if err != nil || len(a2.Assigned) != 1 {
		t.Fatalf("a after b joined: %+v, %v", a2, err)
	}
	kept, moving := a2.Assigned[0], tp{TopicID: tpc.ID, Partition: 1 - a2.Assigned[0].Partition}
	// Still revoking: a may commit its final position of the moving partition.
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "fence", MemberID: "a", MemberEpoch: a2.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: moving.TopicID, Partition: moving.Partition, Offset: 0}}}); err != nil {
		t.Fatalf("commit while revoking: %v", err)
	}
	a3, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "fence", MemberID: "a", MemberEpoch: a2.MemberEpoch, Owned: a2.Assigned})
	if err != nil {
		t.Fatal(err)
	}
	// Released: a zombie commit of the moved partition is refused.
	err = s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "fence", MemberID: "a", MemberEpoch: a3.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: moving.TopicID, Partition: moving.Partition, Offset: 0}}})
	if !errors.Is(err, metadata.ErrNotPartitionOwner) {
		t.Errorf("commit of a released partition: %v, want ErrNotPartitionOwner", err)
	}
	// The old epoch is stale now.
	err = s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "fence", MemberID: "a", MemberEpoch: a.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: kept.TopicID, Partition: kept.Partition, Offset: 0}}})
	if a3.MemberEpoch == a.MemberEpoch || !errors.Is(err, metadata.ErrStaleMemberEpoch) {
		t.Errorf("commit with epoch %d (now %d): %v, want ErrStaleMemberEpoch", a.MemberEpoch, a3.MemberEpoch, err)
	}
	// Unknown member; a commit without member id while members are live.
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "fence", MemberID: "zombie", MemberEpoch: 1,
		Offsets: ok.Offsets}); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("unknown member commit: %v", err)
	}
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "fence", Offsets: ok.Offsets}); !errors.Is(err, metadata.ErrGroupNotEmpty) {
		t.Errorf("simple commit with live members: %v", err)
	}
	// Nothing refused moved a position.
	got, err := s.FetchOffsets(ctx(t), "fence", nil)
	if err != nil || len(got) != 2 || got[0].Offset != 0 || got[1].Offset != 0 {
		t.Fatalf("FetchOffsets: %+v, %v", got, err)
	}
}

func testGroupSimpleCommit(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "simple", 3)
	commit := func(offs ...metadata.OffsetCommit) error {
		return s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "simple", Offsets: offs})
	}
	if err := commit(metadata.OffsetCommit{TopicID: tpc.ID, Partition: 2, Offset: 7, Metadata: "x"},
		metadata.OffsetCommit{TopicID: tpc.ID, Partition: 0, Offset: 3}); err != nil {
		t.Fatalf("simple commit: %v", err)
	}
	if err := commit(metadata.OffsetCommit{TopicID: tpc.ID, Partition: 0, Offset: 5}); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	// All or nothing: a missing partition refuses the whole commit.
	if err := commit(metadata.OffsetCommit{TopicID: tpc.ID, Partition: 1, Offset: 1},
		metadata.OffsetCommit{TopicID: tpc.ID, Partition: 9, Offset: 1}); !errors.Is(err, metadata.ErrPartitionNotFound) {
		t.Errorf("commit of a missing partition: %v", err)
	}
	if err := commit(metadata.OffsetCommit{TopicID: tpc.ID + 100, Partition: 0, Offset: 1}); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("commit of a missing topic: %v", err)
	}
	got, err := s.FetchOffsets(ctx(t), "simple", nil)
	if err != nil || len(got) != 2 || got[0].Partition != 0 || got[0].Offset != 5 || got[1].Offset != 7 || got[1].Metadata != "x" ||
		got[1].CommitTime.IsZero() {
		t.Fatalf("FetchOffsets: %+v, %v", got, err)
	}
	some, err := s.FetchOffsets(ctx(t), "simple", []tp{{TopicID: tpc.ID, Partition: 2}, {TopicID: tpc.ID, Partition: 1}})
	if err != nil || len(some) != 1 || some[0].Partition != 2 {
		t.Fatalf("FetchOffsets(2, 1): %+v, %v", some, err)
	}
	if none, err := s.FetchOffsets(ctx(t), "nobody", nil); err != nil || len(none) != 0 {
		t.Fatalf("FetchOffsets of an unknown group: %+v, %v", none, err)
	}
	l, err := s.ListGroups(ctx(t))
	if err != nil || len(l) != 1 || l[0].Group != "simple" || l[0].State != metadata.GroupEmpty {
		t.Fatalf("ListGroups: %+v, %v", l, err)
	}
}

func testGroupResetAndCopy(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "reset", 2)
	// Partition 0: ten batches of 3 records, timestamps 1000, 2000, ...
	for i := range 10 {
		b := plain(tpc.ID, 0, 3)
		b.MaxTimestamp = int64(1000 * (i + 1))
		commitOne(t, s, b)
	}
	commitOne(t, s, plain(tpc.ID, 1, 4))
	reset := func(req metadata.ResetOffsetsRequest) []metadata.OffsetReset {
		t.Helper()
		req.Group = "r"
		plan, err := s.ResetOffsets(ctx(t), req)
		if err != nil {
			t.Fatalf("ResetOffsets(%+v): %v", req, err)
		}
		return plan
	}
	fetch := func(grp string) map[int32]int64 {
		t.Helper()
		got, err := s.FetchOffsets(ctx(t), grp, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		for _, o := range got {
			m[o.Partition] = o.Offset
		}
		return m
	}
	// A group that does not exist is not created by a reset.
	for _, dry := range []bool{true, false} {
		_, err := s.ResetOffsets(ctx(t), metadata.ResetOffsetsRequest{Group: "r", Spec: metadata.ResetLatest, DryRun: dry})
		if !errors.Is(err, metadata.ErrGroupNotFound) {
			t.Fatalf("reset of a missing group (dry run %v): %v, want ErrGroupNotFound", dry, err)
		}
	}
	if l, err := s.ListGroups(ctx(t)); err != nil || len(l) != 0 {
		t.Fatalf("groups after resets of a missing one: %+v, %v", l, err)
	}
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "r",
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 1, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	// Dry run: a plan, nothing written.
	plan := reset(metadata.ResetOffsetsRequest{Topics: []int64{tpc.ID}, Spec: metadata.ResetLatest, DryRun: true})
	if len(plan) != 2 || plan[0].New != 30 || plan[1].New != 4 || plan[0].Previous != -1 {
		t.Fatalf("dry run plan: %+v", plan)
	}
	if got := fetch("r"); len(got) != 1 || got[1] != 0 {
		t.Fatalf("dry run wrote %v", got)
	}
	// To a timestamp: the first offset of the first batch whose max
	// timestamp is at or after it, equal to ListOffset's answer.
	reset(metadata.ResetOffsetsRequest{Topics: []int64{tpc.ID}, Spec: metadata.ResetTimestamp, Timestamp: 4500})
	want, err := s.ListOffset(ctx(t), tpc.ID, 0, metadata.OffsetTimestamp, 4500)
	if err != nil {
		t.Fatal(err)
	}
	want1, err := s.ListOffset(ctx(t), tpc.ID, 1, metadata.OffsetTimestamp, 4500)
	if err != nil {
		t.Fatal(err)
	}
	if got := fetch("r"); got[0] != want || want != 12 || got[1] != want1 {
		t.Fatalf("after reset to 4500: %v, want partition 0 at %d (12) and 1 at %d", got, want, want1)
	}
	// Shift back by 5, clamped at the log start; explicit offset for one partition.
	reset(metadata.ResetOffsetsRequest{Spec: metadata.ResetShift, Shift: -5})
	if got := fetch("r"); got[0] != 7 || got[1] != 0 {
		t.Fatalf("after shift -5: %v", got)
	}
	plan = reset(metadata.ResetOffsetsRequest{Partitions: []tp{{TopicID: tpc.ID, Partition: 0}}, Spec: metadata.ResetOffset, Offset: 99})
	if len(plan) != 1 || plan[0].Previous != 7 || plan[0].New != 30 {
		t.Fatalf("reset to 99 (clamped to 30): %+v", plan)
	}
	reset(metadata.ResetOffsetsRequest{Spec: metadata.ResetEarliest})
	if got := fetch("r"); got[0] != 0 || got[1] != 0 {
		t.Fatalf("after earliest: %v", got)
	}
	// Refused while live, unless forced.
	joinStable(t, s, "r", "m", "reset")
	if _, err := s.ResetOffsets(ctx(t), metadata.ResetOffsetsRequest{Group: "r", Spec: metadata.ResetLatest}); !errors.Is(err, metadata.ErrGroupNotEmpty) {
		t.Errorf("reset with live members: %v", err)
	}
	reset(metadata.ResetOffsetsRequest{Spec: metadata.ResetLatest, Force: true})
	if got := fetch("r"); got[0] != 30 || got[1] != 4 {
		t.Fatalf("after forced latest: %v", got)
	}
	// Copy.
	n, err := s.CopyOffsets(ctx(t), "r", "r2")
	if err != nil || n != 2 {
		t.Fatalf("CopyOffsets: %d, %v", n, err)
	}
	if got := fetch("r2"); got[0] != 30 || got[1] != 4 {
		t.Fatalf("copied: %v", got)
	}
	if _, err := s.CopyOffsets(ctx(t), "none", "r3"); !errors.Is(err, metadata.ErrGroupNotFound) {
		t.Errorf("copy from an unknown group: %v", err)
	}
	if _, err := s.CopyOffsets(ctx(t), "r2", "r"); !errors.Is(err, metadata.ErrGroupNotEmpty) {
		t.Errorf("copy into a group with live members: %v", err)
	}
}

func testGroupDelete(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "del", 1)
	r := joinStable(t, s, "del", "m", "del")
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "del", MemberID: "m", MemberEpoch: r.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroup(ctx(t), "del"); !errors.Is(err, metadata.ErrGroupNotEmpty) {
		t.Fatalf("delete with a live member: %v", err)
	}
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "del", MemberID: "m", MemberEpoch: metadata.LeaveEpoch}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroup(ctx(t), "del"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.DescribeGroup(ctx(t), "del"); !errors.Is(err, metadata.ErrGroupNotFound) {
		t.Errorf("describe deleted: %v", err)
	}
	if got, err := s.FetchOffsets(ctx(t), "del", nil); err != nil || len(got) != 0 {
		t.Errorf("positions of a deleted group: %v, %v", got, err)
	}
	if err := s.DeleteGroup(ctx(t), "del"); !errors.Is(err, metadata.ErrGroupNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

func testGroupDeleteOffsets(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "delofs", 2)
	r := joinStable(t, s, "delofs", "m", "delofs")
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "delofs", MemberID: "m", MemberEpoch: r.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 0}, {TopicID: tpc.ID, Partition: 1, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	p0 := []metadata.TopicPartition{{TopicID: tpc.ID, Partition: 0}}
	if err := s.DeleteOffsets(ctx(t), "delofs", p0); !errors.Is(err, metadata.ErrGroupNotEmpty) {
		t.Fatalf("delete offsets with a live member: %v", err)
	}
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "delofs", MemberID: "m", MemberEpoch: metadata.LeaveEpoch}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteOffsets(ctx(t), "delofs", p0); err != nil {
		t.Fatalf("delete offsets: %v", err)
	}
	got, err := s.FetchOffsets(ctx(t), "delofs", nil)
	if err != nil || len(got) != 1 || got[0].Partition != 1 {
		t.Fatalf("positions after deleting partition 0's: %+v, %v", got, err)
	}
	if err := s.DeleteOffsets(ctx(t), "delofs", p0); err != nil {
		t.Errorf("deleting a position already gone: %v", err)
	}
	if err := s.DeleteOffsets(ctx(t), "none", p0); !errors.Is(err, metadata.ErrGroupNotFound) {
		t.Errorf("delete offsets of an unknown group: %v", err)
	}
}

func testGroupLagInputs(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "lag", 3)
	for i := range 6 {
		b := plain(tpc.ID, 0, int32(i+1))
		b.MaxTimestamp = int64(5000 + i)
		commitOne(t, s, b)
	}
	commitOne(t, s, plain(tpc.ID, 1, 2))
	// Partition 0 mid-batch, 1 at the head, 2 empty.
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "lag", Offsets: []metadata.OffsetCommit{
		{TopicID: tpc.ID, Partition: 0, Offset: 4}, {TopicID: tpc.ID, Partition: 1, Offset: 2},
		{TopicID: tpc.ID, Partition: 2, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GroupLag(ctx(t), "lag")
	if err != nil || len(got) != 3 {
		t.Fatalf("GroupLag: %+v, %v", got, err)
	}
	for i, l := range got {
		// Independently: walk the log.
		want := metadata.PartitionLagInput{TopicID: tpc.ID, Partition: int32(i), Committed: l.Committed}
		refs := allBatches(t, s, tpc.ID, int32(i))
		want.HighWatermark = hw(t, s, tpc.ID, int32(i))
		for _, r := range refs {
			if r.LastOffset >= want.Committed {
				want.BytesBehind += r.ByteLength
				if want.FirstUnconsumedAppendTime == 0 {
					want.FirstUnconsumedAppendTime, want.FirstUnconsumedMaxTimestamp = r.LogAppendTime, r.MaxTimestamp
				}
			}
		}
		if l != want {
			t.Errorf("partition %d: %+v, want %+v", i, l, want)
		}
	}
	if got[0].BytesBehind == 0 || got[0].FirstUnconsumedMaxTimestamp != 5002 || got[1].BytesBehind != 0 {
		t.Errorf("lag figures not exercised: %+v", got)
	}
}

func testGroupValidation(t *testing.T, s metadata.Store) {
	for _, req := range []metadata.HeartbeatRequest{
		{Group: "", Subscription: []string{"t"}},
		{Group: "g"}, // join without subscription
		{Group: "g", Subscription: []string{"bad name"}},
		{Group: "g", MemberEpoch: 2},                 // no member id
		{Group: "g", MemberID: "m", MemberEpoch: -2}, // bad epoch
		{Group: "g", MemberID: "m", MemberEpoch: 1, Subscription: []string{}},
	} {
		if _, err := s.Heartbeat(ctx(t), req); !errors.Is(err, metadata.ErrInvalidGroup) {
			t.Errorf("Heartbeat(%+v): %v, want ErrInvalidGroup", req, err)
		}
	}
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "g",
		Offsets: []metadata.OffsetCommit{{TopicID: 1, Offset: -1}}}); !errors.Is(err, metadata.ErrInvalidGroup) {
		t.Errorf("negative offset: %v", err)
	}
	if _, err := s.ResetOffsets(ctx(t), metadata.ResetOffsetsRequest{Group: "g", Spec: 42}); !errors.Is(err, metadata.ErrInvalidGroup) {
		t.Errorf("bad reset spec: %v", err)
	}
	// A leave of an unknown member is harmless; a heartbeat is not.
	if r, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: metadata.LeaveEpoch}); err != nil || r.MemberEpoch != metadata.LeaveEpoch {
		t.Errorf("leave of an unknown group: %+v, %v", r, err)
	}
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: 1}); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("heartbeat in an unknown group: %v", err)
	}
	if _, err := s.DescribeGroup(ctx(t), "g"); !errors.Is(err, metadata.ErrGroupNotFound) {
		t.Errorf("describe of an unknown group: %v", err)
	}
}

// testGroupTopicChanges: a stable member learns on its next heartbeat of a
// subscribed topic created, or deleted and re-created, after it joined.
func testGroupTopicChanges(t *testing.T, s metadata.Store) {
	r := joinStable(t, s, "tc", "m", "later")
	if len(r.Assigned) != 0 {
		t.Fatalf("join before the topic exists: %+v", r)
	}
	beat := func() metadata.HeartbeatResponse {
		t.Helper()
		var err error
		r, err = s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "tc", MemberID: "m", MemberEpoch: r.MemberEpoch, Owned: r.Assigned})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	beat() // stable, nothing assigned
	tp := createTopic(t, s, "later", 3)
	if got := beat(); len(got.Assigned) != 3 || got.Assigned[0].TopicID != tp.ID {
		t.Fatalf("after the topic was created: %+v", got)
	}
	if err := s.DeleteTopic(ctx(t), "later"); err != nil {
		t.Fatal(err)
	}
	tp2 := createTopic(t, s, "later", 2)
	beat() // the deleted topic's partitions are revoked (released at once: the next beat lists none)
	got := beat()
	if len(got.Assigned) != 2 || got.Assigned[0].TopicID != tp2.ID {
		t.Fatalf("after the topic was re-created: %+v", got)
	}
}
