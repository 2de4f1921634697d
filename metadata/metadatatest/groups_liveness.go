package metadatatest

import (
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// Liveness: every path that reads it (commit, reset, copy, delete,
// describe, list) treats an expired member as gone, with package group's
// one rule (Member.Expired), whether or not a heartbeat fenced it yet.

// expiry is the session timeout of the liveness tests; they wait past it.
const expiry = 300 * time.Millisecond

// testGroupExpiredMember: a member that joined with a short session,
// committed and went silent (nobody else heartbeats) is gone for every
// path: its commit is refused with ErrUnknownMember, the group is empty,
// a member-less commit and a reset without force are accepted, and the
// zombie's commits stay refused after them.
func testGroupExpiredMember(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "zombie", 1)
	r, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "z", MemberID: "m", Subscription: []string{"zombie"},
		SessionTimeout: expiry})
	if err != nil || len(r.Assigned) != 1 {
		t.Fatalf("join: %+v, %v", r, err)
	}
	at := func(off int64) metadata.CommitOffsetsRequest {
		return metadata.CommitOffsetsRequest{Group: "z", MemberID: "m", MemberEpoch: r.MemberEpoch,
			Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: off}}}
	}
	if err := s.CommitOffsets(ctx(t), at(1)); err != nil {
		t.Fatalf("live commit: %v", err)
	}
	time.Sleep(expiry * 2)
	if err := s.CommitOffsets(ctx(t), at(2)); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("commit of an expired member: %v, want ErrUnknownMember", err)
	}
	d, err := s.DescribeGroup(ctx(t), "z")
	if err != nil || d.State != metadata.GroupEmpty || len(d.Members) != 0 {
		t.Errorf("describe with an expired member: %+v, %v", d, err)
	}
	if l, err := s.ListGroups(ctx(t)); err != nil || len(l) != 1 || l[0].Members != 0 || l[0].State != metadata.GroupEmpty {
		t.Errorf("list with an expired member: %+v, %v", l, err)
	}
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "z",
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 0}}}); err != nil {
		t.Errorf("member-less commit of an empty group: %v", err)
	}
	if _, err := s.ResetOffsets(ctx(t), metadata.ResetOffsetsRequest{Group: "z", Spec: metadata.ResetEarliest}); err != nil {
		t.Errorf("reset of an empty group: %v", err)
	}
	if err := s.CommitOffsets(ctx(t), at(3)); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("zombie commit after the reset: %v, want ErrUnknownMember", err)
	}
	// The zombie is fenced, not only ignored: its heartbeat with the old
	// epoch does not bring it back.
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "z", MemberID: "m", MemberEpoch: r.MemberEpoch,
		Owned: r.Assigned, SessionTimeout: expiry}); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("zombie heartbeat after the reset: %v, want ErrUnknownMember", err)
	}
	got, err := s.FetchOffsets(ctx(t), "z", nil)
	if err != nil || len(got) != 1 || got[0].Offset != 0 {
		t.Fatalf("position: %+v, %v, want the reset's 0", got, err)
	}
	if err := s.DeleteGroup(ctx(t), "z"); err != nil {
		t.Errorf("delete of an empty group: %v", err)
	}
}

// testGroupRevocationExpiry: a member that keeps heartbeating but holds a
// revoked partition past its session timeout is expired too (the second
// half of Member.Expired), for describe, delete and its own commits.
func testGroupRevocationExpiry(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "hold", 2)
	a, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "h", MemberID: "a", Subscription: []string{"hold"}, SessionTimeout: expiry})
	if err != nil || len(a.Assigned) != 2 {
		t.Fatalf("join a: %+v, %v", a, err)
	}
	if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "h", MemberID: "b", Subscription: []string{"hold"},
		SessionTimeout: expiry}); err != nil {
		t.Fatal(err)
	}
	// a never releases what it must give up, but keeps heartbeating.
	owned := a.Assigned
	deadline := time.Now().Add(expiry * 2)
	for time.Now().Before(deadline) {
		if a, err = s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "h", MemberID: "a", MemberEpoch: a.MemberEpoch,
			Owned: owned, SessionTimeout: expiry}); err != nil {
			t.Fatalf("a's heartbeat: %v", err)
		}
		time.Sleep(expiry / 6)
	}
	d, err := s.DescribeGroup(ctx(t), "h")
	if err != nil || d.State != metadata.GroupEmpty {
		t.Fatalf("describe: %+v, %v (a held a revoked partition too long, b never heartbeat)", d, err)
	}
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "h", MemberID: "a", MemberEpoch: a.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: owned[0].Partition, Offset: 1}}}); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Errorf("commit of a member that held a revocation too long: %v, want ErrUnknownMember", err)
	}
	if err := s.DeleteGroup(ctx(t), "h"); err != nil {
		t.Errorf("delete of a group whose members all expired: %v", err)
	}
}

// testGroupLateLeave: a member that rejoins (a new session, same id) moves
// to a new epoch; a leave naming the older session's epoch is refused and
// removes nothing, one naming the current epoch leaves.
func testGroupLateLeave(t *testing.T, s metadata.Store) {
	createTopic(t, s, "late", 2)
	old := joinStable(t, s, "ll", "m", "late")
	cur := joinStable(t, s, "ll", "m", "late") // the new session's join
	if cur.MemberEpoch == old.MemberEpoch || len(cur.Assigned) != 2 {
		t.Fatalf("rejoin: %+v after %+v, want a new epoch and the partitions back", cur, old)
	}
	leave := func(epoch int32) error {
		_, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: "ll", MemberID: "m", MemberEpoch: metadata.LeaveEpoch,
			LeavingEpoch: epoch})
		return err
	}
	if err := leave(old.MemberEpoch); !errors.Is(err, metadata.ErrStaleMemberEpoch) {
		t.Errorf("late leave: %v, want ErrStaleMemberEpoch", err)
	}
	if d, err := s.DescribeGroup(ctx(t), "ll"); err != nil || len(d.Members) != 1 {
		t.Fatalf("after the late leave: %+v, %v", d, err)
	}
	if err := leave(cur.MemberEpoch); err != nil {
		t.Errorf("leave of the current session: %v", err)
	}
	if d, err := s.DescribeGroup(ctx(t), "ll"); err != nil || len(d.Members) != 0 {
		t.Fatalf("after the leave: %+v, %v", d, err)
	}
}
