package agent_test

import (
	"context"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/objectstore"
)

// TestGroupStartsSetBased: a member granted 64 partitions at once finds
// where each starts with one read of the topic's partition states, not
// two ListOffset calls per partition one after the other.
func TestGroupStartsSetBased(t *testing.T) {
	meta := &countingMeta{Store: groupBackends(t)["sqlite"](t)}
	n := startKillable(t, meta, objectstore.NewMemory(), groupConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const parts = 64
	if _, err := n.c.CreateTopic(ctx, "wide", parts, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := n.c.Produce(ctx, "wide", 3, &floev1.Record{Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	before, states := meta.listOffset.Load(), meta.states.Load()
	s, err := n.c.Log.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "wide", Group: "g",
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var a *floev1.GroupAssignment
	for a == nil {
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		a = r.GetAssignment()
	}
	if len(a.GetPartitions()) != parts {
		t.Fatalf("assigned %d partitions, want %d", len(a.GetPartitions()), parts)
	}
	for _, p := range a.GetPartitions() {
		wantHW := int64(0)
		if p.GetPartition() == 3 {
			wantHW = 1
		}
		if p.GetStartOffset() != 0 || p.GetHighWatermark() != wantHW {
			t.Errorf("partition %d: start %d, high watermark %d", p.GetPartition(), p.GetStartOffset(), p.GetHighWatermark())
		}
	}
	if got := meta.listOffset.Load() - before; got != 0 {
		t.Errorf("%d ListOffset calls to start %d partitions, want none", got, parts)
	}
	if got := meta.states.Load() - states; got > 2 {
		t.Errorf("%d PartitionStates calls, want one (or two)", got)
	}
}
