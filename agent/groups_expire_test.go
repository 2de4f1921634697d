package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
)

// TestGroupRetentionExpiresEmptyGroups: with GroupRetention 1 s, a group
// left with positions and no member is deleted by the agent; a group
// with a live member stays.
func TestGroupRetentionExpiresEmptyGroups(t *testing.T) {
	h := start(t, func(c *agent.Config, _ *batcher.Config) { c.GroupRetention = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	g := h.c.Groups()
	if _, err := g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "left",
		Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "live", MemberId: "m", Subscription: []string{"t"},
		SessionTimeoutMs: 60000}); err != nil {
		t.Fatal(err)
	}
	for {
		l, err := g.ListGroups(ctx, &floev1.ListGroupsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, x := range l.GetGroups() {
			names[x.GetGroup()] = true
		}
		if !names["live"] {
			t.Fatalf("the group with a live member expired: %v", l.GetGroups())
		}
		if !names["left"] {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the empty group never expired: %v", l.GetGroups())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
