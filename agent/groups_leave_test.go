package agent_test

import (
	"context"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// leaveSpy passes every call to its store and reports each leave's answer.
type leaveSpy struct {
	metadata.Store
	leaves chan error
}

func (s *leaveSpy) Heartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	resp, err := s.Store.Heartbeat(ctx, req)
	if req.MemberEpoch == metadata.LeaveEpoch {
		s.leaves <- err
	}
	return resp, err
}

// TestGroupLateLeaveKeepsNewSession: a client reconnects through agent B
// as the same member (id and epoch) while agent A's handler of its old
// stream is still running; when A's handler ends, its leave must not
// remove the member B serves.
func TestGroupLateLeaveKeepsNewSession(t *testing.T) {
	for name, open := range groupBackends(t) {
		t.Run(name, func(t *testing.T) {
			meta := open(t)
			spyA := &leaveSpy{Store: meta, leaves: make(chan error, 4)}
			store := objectstore.NewMemory()
			a := startKillable(t, spyA, store, groupConfig())
			b := startKillable(t, meta, store, groupConfig())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := a.c.CreateTopic(ctx, "late", 2, nil); err != nil {
				t.Fatal(err)
			}
			first := func(s floev1.LogService_SubscribeClient) *floev1.GroupAssignment {
				t.Helper()
				for {
					r, err := s.Recv()
					if err != nil {
						t.Fatal(err)
					}
					if as := r.GetAssignment(); as != nil {
						return as
					}
				}
			}
			actx, acancel := context.WithCancel(ctx)
			sa, err := a.c.Log.Subscribe(actx, &floev1.SubscribeRequest{Topic: "late", Group: "g", MemberId: "m", SessionTimeoutMs: 10000})
			if err != nil {
				t.Fatal(err)
			}
			asA := first(sa)
			sb, err := b.c.Log.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "late", Group: "g", MemberId: "m",
				MemberEpoch: asA.GetMemberEpoch(), SessionTimeoutMs: 10000})
			if err != nil {
				t.Fatal(err)
			}
			first(sb)
			acancel() // A's stream ends late: its handler leaves now
			select {
			case <-spyA.leaves:
			case <-ctx.Done():
				t.Fatal("agent A never sent its leave")
			}
			d, err := b.c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "g"})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.GetMembers()) != 1 || d.GetMembers()[0].GetMemberId() != "m" {
				t.Fatalf("members after A's late leave: %v, want m (served by B)", d.GetMembers())
			}
		})
	}
}
