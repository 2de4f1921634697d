package agent_test

import (
	"context"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// TestGroupIdleFollowerCommits: a member that was handed 3,000 records and
// then waits in Poll (caught up, nothing new) commits them within a commit
// interval or so: the committed position reaches 3,000 without another
// record or Poll call.
func TestGroupIdleFollowerCommits(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "idle", 1, nil); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := 0; i < n; i += 500 {
		recs := make([]*floev1.Record, 500)
		for j := range recs {
			recs[j] = client.Value(nil, []byte("v"))
		}
		if _, err := h.c.Produce(ctx, "idle", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	g, err := client.NewGroupConsumer([]*client.Client{h.c}, client.GroupOptions{Group: "g", Topic: "idle", Earliest: true,
		CommitInterval: 200 * time.Millisecond, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Abort()
	handed := 0
	for handed < n {
		r, err := g.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			handed++
		}
	}
	// Idle: one Poll waits for a record that never comes.
	pctx, pcancel := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() { _, err := g.Poll(pctx); polled <- err }()
	defer func() { pcancel(); <-polled }()
	var committed int64
	for ctx.Err() == nil {
		o, err := h.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "g"})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.GetOffsets()) == 1 {
			if committed = o.GetOffsets()[0].GetOffset(); committed == n {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("an idle member's committed position stayed at %d, want %d", committed, n)
}
