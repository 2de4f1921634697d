package group

import (
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

func fenceGroup() *Group {
	return &Group{Name: "g", Epoch: 5, Members: []*Member{
		{ID: "a", Epoch: 5, Assigned: []TP{{TopicID: 1, Partition: 0}, {TopicID: 1, Partition: 2}}, Revoking: []TP{{TopicID: 1, Partition: 1}}, RevokingSince: 900,
			SessionTimeoutMs: 1000, LastHeartbeat: 1000},
		{ID: "b", Epoch: 4, Assigned: []TP{{TopicID: 1, Partition: 3}}, Revoking: []TP{}, SessionTimeoutMs: 1000, LastHeartbeat: 1000},
	}}
}

func TestCheckCommit(t *testing.T) {
	off := func(p int32) []metadata.OffsetCommit {
		return []metadata.OffsetCommit{{TopicID: 1, Partition: p, Offset: 3}}
	}
	for _, tc := range []struct {
		name   string
		g      *Group
		member string
		epoch  int32
		parts  []metadata.OffsetCommit
		now    int64
		want   error
	}{
		{"owner, assigned", fenceGroup(), "a", 5, off(2), 1500, nil},
		{"owner, revoking", fenceGroup(), "a", 5, off(1), 1500, nil},
		{"not owned", fenceGroup(), "a", 5, off(3), 1500, metadata.ErrNotPartitionOwner},
		{"one of two not owned", fenceGroup(), "a", 5, append(off(0), off(3)...), 1500, metadata.ErrNotPartitionOwner},
		{"stale epoch", fenceGroup(), "a", 4, off(0), 1500, metadata.ErrStaleMemberEpoch},
		{"unknown member", fenceGroup(), "z", 5, off(0), 1500, metadata.ErrUnknownMember},
		{"no group", nil, "a", 5, off(0), 1500, metadata.ErrUnknownMember},
		{"session expired", fenceGroup(), "b", 4, off(3), 2001, metadata.ErrUnknownMember},
		{"session just alive", fenceGroup(), "b", 4, off(3), 2000, nil},
		{"revocation held too long", fenceGroup(), "a", 5, off(0), 1901, metadata.ErrUnknownMember},
		{"expired and stale: unknown first", fenceGroup(), "b", 3, off(3), 2001, metadata.ErrUnknownMember},
		{"member-less, live members", fenceGroup(), "", 0, off(0), 1500, metadata.ErrGroupNotEmpty},
		{"member-less, one live (b)", fenceGroup(), "", 0, off(0), 1901, metadata.ErrGroupNotEmpty},
		{"member-less, all expired", fenceGroup(), "", 0, off(0), 2001, nil},
		{"member-less, no group", nil, "", 0, off(0), 0, nil},
	} {
		req := metadata.CommitOffsetsRequest{Group: "g", MemberID: tc.member, MemberEpoch: tc.epoch, Offsets: tc.parts}
		err := CheckCommit(tc.g, req, tc.now)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestLiveCountAndRequireEmpty(t *testing.T) {
	for _, tc := range []struct {
		now  int64
		live int
	}{{1500, 2}, {1901, 1}, {2000, 1}, {2001, 0}} {
		g := fenceGroup()
		if n := LiveCount(g, tc.now); n != tc.live {
			t.Errorf("LiveCount at %d: %d, want %d", tc.now, n, tc.live)
		}
		if got := len(LiveOnly(g, tc.now).Members); got != tc.live {
			t.Errorf("LiveOnly at %d: %d members, want %d", tc.now, got, tc.live)
		}
		err := RequireEmpty(g, tc.now, "force")
		if (tc.live > 0) != errors.Is(err, metadata.ErrGroupNotEmpty) {
			t.Errorf("RequireEmpty at %d: %v", tc.now, err)
		}
		if AnyExpired(g, tc.now) != (tc.live < 2) {
			t.Errorf("AnyExpired at %d", tc.now)
		}
	}
}

func TestFence(t *testing.T) {
	topics := map[string]Topic{"t": {ID: 1, Name: "t", Partitions: 4}}
	g := fenceGroup()
	for _, m := range g.Members {
		m.Subscription = []string{"t"}
	}
	if out := Fence(g, topics, 1500); len(out.Deleted) != 0 || out.GroupChanged || g.Epoch != 5 {
		t.Fatalf("nothing expired: %+v, epoch %d", out, g.Epoch)
	}
	out := Fence(g, topics, 1901) // a held a revoked partition too long
	if len(out.Deleted) != 1 || out.Deleted[0] != "a" || !out.GroupChanged || g.Epoch != 6 || len(g.Members) != 1 {
		t.Fatalf("fence of a: %+v, epoch %d, members %d", out, g.Epoch, len(g.Members))
	}
	if b := g.Members[0]; len(b.Target) != 4 || len(out.Upsert) != 1 || out.Upsert[0] != b {
		t.Fatalf("b's new target: %+v, upsert %+v", b.Target, out.Upsert)
	}
	// A fenced member's commit, even with its last epoch, is refused after.
	if err := CheckCommit(g, metadata.CommitOffsetsRequest{Group: "g", MemberID: "a", MemberEpoch: 5,
		Offsets: []metadata.OffsetCommit{{TopicID: 1, Partition: 0}}}, 1901); !errors.Is(err, metadata.ErrUnknownMember) {
		t.Fatalf("commit after the fence: %v", err)
	}
}

func TestLeaveOfAnOlderSession(t *testing.T) {
	for _, tc := range []struct {
		leaving int32
		want    error
	}{{0, nil}, {5, nil}, {4, metadata.ErrStaleMemberEpoch}} {
		g := fenceGroup()
		req := metadata.HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: metadata.LeaveEpoch, LeavingEpoch: tc.leaving}
		if err := Validate(req); err != nil {
			t.Fatal(err)
		}
		out, err := Heartbeat(g, req, map[string]Topic{}, 1500, func() string { return "x" })
		if tc.want == nil {
			if err != nil || len(out.Deleted) != 1 || out.Deleted[0] != "a" {
				t.Errorf("leave at %d: %+v, %v", tc.leaving, out, err)
			}
		} else if !errors.Is(err, tc.want) || len(g.Members) != 2 {
			t.Errorf("late leave at %d: %v, members %d", tc.leaving, err, len(g.Members))
		}
	}
	if err := Validate(metadata.HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 3, LeavingEpoch: 3}); !errors.Is(err, metadata.ErrInvalidGroup) {
		t.Errorf("leaving epoch on a heartbeat: %v", err)
	}
}

func TestExpire(t *testing.T) {
	const day = 24 * time.Hour
	d := day.Milliseconds()
	for _, tc := range []struct {
		name                 string
		g                    *Group
		created, commit, now int64
		retention            time.Duration
		want                 bool
	}{
		{"empty, old commit", &Group{Name: "g"}, 0, 10, 10 + 7*d + 1, 7 * day, true},
		{"empty, at the bound", &Group{Name: "g"}, 0, 10, 10 + 7*d, 7 * day, false},
		{"empty, recent commit", &Group{Name: "g"}, 0, 5 * d, 7*d + 1, 7 * day, false},
		{"never committed, created long ago", &Group{Name: "g"}, 100, 0, 100 + 7*d + 1, 7 * day, true},
		{"created recently", &Group{Name: "g"}, 6 * d, 0, 7*d + 1, 7 * day, false},
		{"retention off", &Group{Name: "g"}, 0, 0, 100 * d, 0, false},
		{"a live member", fenceGroup(), 0, 0, 1500, time.Millisecond, false},
		{"expired members, recent heartbeat", fenceGroup(), 0, 0, 2001, day, false},
		{"expired members, old heartbeat", fenceGroup(), 0, 0, 1000 + d + 1, day, true},
	} {
		if got := Expire(tc.g, tc.created, tc.commit, tc.now, tc.retention); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
