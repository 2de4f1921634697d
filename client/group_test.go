package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// fakeGroupAgent serves one group subscription: it grants partition 0,
// sends the messages given, then revokes partition 0; it keeps the
// commits it gets.
type fakeGroupAgent struct {
	floev1.UnimplementedLogServiceServer
	floev1.UnimplementedGroupServiceServer
	msgs []*floev1.SubscribeResponse

	mu      sync.Mutex // protects commits
	commits []int64
}

func (f *fakeGroupAgent) Subscribe(_ *floev1.SubscribeRequest, s floev1.LogService_SubscribeServer) error {
	out := []*floev1.SubscribeResponse{{Assignment: &floev1.GroupAssignment{MemberId: "m", MemberEpoch: 1,
		Partitions: []*floev1.AssignedPartition{{Partition: 0, StartOffset: 0, HighWatermark: 10}}}}}
	out = append(out, f.msgs...)
	out = append(out, &floev1.SubscribeResponse{Assignment: &floev1.GroupAssignment{MemberId: "m", MemberEpoch: 2, Revoked: []int32{0}}})
	for _, m := range out {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	<-s.Context().Done()
	return nil
}

func (f *fakeGroupAgent) CommitOffsets(_ context.Context, req *floev1.CommitOffsetsRequest) (*floev1.CommitOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range req.GetOffsets() {
		f.commits = append(f.commits, o.GetOffset())
	}
	return &floev1.CommitOffsetsResponse{}, nil
}

// TestGroupCommitsPastCompactedTail: on a compacted topic a message's last
// records may be gone (offsets 1..3 here); once its last record is handed
// over, the member's position is the message's next offset, so that the
// revocation commit reaches what the agent handed (it waited the whole
// revoke wait when the commit stopped at the last record + 1).
func TestGroupCommitsPastCompactedTail(t *testing.T) {
	f := &fakeGroupAgent{msgs: []*floev1.SubscribeResponse{{Partition: 0, HighWatermark: 10, NextOffset: 4,
		Records: []*floev1.Record{{Offset: 0, Value: []byte("a")}}}}}
	c := startFakeServer(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := client.NewGroupConsumer([]*client.Client{c}, client.GroupOptions{Group: "g", Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Abort()
	var got []int64
	for len(g.Revoked()) == 0 {
		r, err := g.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			got = append(got, r.GetOffset())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(got) != 1 || len(f.commits) != 1 || f.commits[0] != 4 {
		t.Fatalf("records %v, commits %v; want the revocation to commit the message's next offset 4", got, f.commits)
	}
}
