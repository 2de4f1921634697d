package metafault_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// TestGroupFaults: group operations have their own fault groups; a lost
// heartbeat answer applied the join (the member exists), a refused commit
// moved nothing.
func TestGroupFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inner, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	s := metafault.Wrap(inner)
	defer s.Close()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.Next(metafault.OpHeartbeat, 1, metafault.Fault{Mode: metafault.AnswerLost})
	if _, err := s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: "g", MemberID: "m", Subscription: []string{"t"}}); !errors.Is(err, metafault.ErrInjected) {
		t.Fatalf("lost answer: %v", err)
	}
	d, err := s.DescribeGroup(ctx, "g")
	if err != nil || len(d.Members) != 1 {
		t.Fatalf("after a lost heartbeat answer: %+v, %v; want the member joined", d, err)
	}
	s.Next(metafault.OpGroupCommit, 1, metafault.Fault{Mode: metafault.Refused})
	err = s.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "g", MemberID: "m", MemberEpoch: d.Members[0].MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tp.ID, Offset: 0}}})
	if !metadata.NotApplied(err) {
		t.Fatalf("refused commit: %v", err)
	}
	if got, err := s.FetchOffsets(ctx, "g", nil); err != nil || len(got) != 0 {
		t.Fatalf("after a refused commit: %v, %v", got, err)
	}
	if s.Calls(metafault.OpHeartbeat) != 1 || s.Calls(metafault.OpGroupCommit) != 1 || s.Calls(metafault.OpGroupRead) != 2 {
		t.Errorf("calls: heartbeat %d, commit %d, read %d", s.Calls(metafault.OpHeartbeat),
			s.Calls(metafault.OpGroupCommit), s.Calls(metafault.OpGroupRead))
	}
}
