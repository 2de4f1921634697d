package agent_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/objectstore"
)

// memberIDs lists the group's live members.
func memberIDs(ctx context.Context, t *testing.T, c *client.Client, group string) []string {
	t.Helper()
	d, err := c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: group})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range d.GetMembers() {
		ids = append(ids, m.GetMemberId())
	}
	return ids
}

// Three agents on one PostgreSQL. Member x talks to agent A (then B),
// member y to B, member z to C. When A is killed, x reconnects to B as the
// same member and keeps its partitions (no rebalance); when C is killed,
// z's partitions go to the others once its session times out. Every
// record is consumed, and a partition never has two owners. The log shows
// the rebalance times on a join and on a kill, with the session timeout.
func TestGroupAgentKilled(t *testing.T) {
	dsn := testenv.Postgres(t)
	store := objectstore.NewMemory()
	acfg := groupConfig()
	metaA := openPostgres(t, dsn)
	a := startKillable(t, metaA, store, acfg)
	b := startKillable(t, openPostgres(t, dsn), store, acfg)
	metaC := openPostgres(t, dsn)
	c := startKillable(t, metaC, store, acfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const parts = 6
	if _, err := b.c.CreateTopic(ctx, "k", parts, nil); err != nil {
		t.Fatal(err)
	}
	produced := 0
	produce := func(k int) {
		for range k {
			if _, err := b.c.Produce(ctx, "k", int32(produced%parts), client.Value(nil, []byte(fmt.Sprint(produced)))); err != nil {
				t.Fatal(err)
			}
			produced++
		}
	}
	produce(60)
	own := newOwnership(t)
	x := startMember(ctx, t, "x", []*client.Client{a.c, b.c}, own, "g", "k")
	y := startMember(ctx, t, "y", []*client.Client{b.c}, own, "g", "k")
	waitStable(ctx, t, b.c, "g", 2)
	z := startMember(ctx, t, "z", []*client.Client{c.c}, own, "g", "k")
	joinTook := waitStable(ctx, t, b.c, "g", 3)
	before := memberIDs(ctx, t, b.c, "g")
	produce(60)

	// Kill A as a crash does: its store goes first, so it cannot leave.
	metaA.Close()
	a.kill()
	produce(60)
	waitConsumed(t, own, &produced)
	if after := memberIDs(ctx, t, b.c, "g"); !slices.Equal(before, after) {
		t.Fatalf("members %v after A died, want the same %v (x rejoins as itself)", after, before)
	}

	// Kill C: z's session (3 s) times out and its partitions move.
	metaC.Close()
	killed := time.Now()
	c.kill()
	if err := z.kill(own); err != nil {
		t.Fatal(err)
	}
	produce(60)
	waitStable(ctx, t, b.c, "g", 2)
	killTook := time.Since(killed)
	waitConsumed(t, own, &produced)
	t.Logf("rebalance on a join: %v; on an agent's death (session timeout 3s): %v", joinTook.Round(time.Millisecond), killTook.Round(time.Millisecond))
	for _, m := range []*member{x, y} {
		if err := m.leave(); err != nil {
			t.Fatal(err)
		}
	}
}

func waitConsumed(t *testing.T, own *ownership, produced *int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		distinct, _ := own.counts()
		if distinct == *produced {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records consumed", distinct, *produced)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Rebalance time on a join, through the agent the other members use (it
// pokes their subscriptions) and through another agent (they learn it at
// their next heartbeat, a third of the 3 s session timeout); logged, not
// asserted.
func TestGroupRebalanceOnJoin(t *testing.T) {
	dsn := testenv.Postgres(t)
	store := objectstore.NewMemory()
	a := startKillable(t, openPostgres(t, dsn), store, groupConfig())
	b := startKillable(t, openPostgres(t, dsn), store, groupConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.c.CreateTopic(ctx, "j", 12, nil); err != nil {
		t.Fatal(err)
	}
	own := newOwnership(t)
	var ms []*member
	for i, c := range []*client.Client{a.c, a.c, a.c, b.c} {
		start := time.Now()
		ms = append(ms, startMember(ctx, t, fmt.Sprint("m", i), []*client.Client{c}, own, "g", "j"))
		waitStable(ctx, t, a.c, "g", i+1)
		if i >= 2 {
			where := "the same agent"
			if c == b.c {
				where = "another agent"
			}
			t.Logf("member %d joined through %s: stable after %v", i+1, where, time.Since(start).Round(time.Millisecond))
		}
	}
	for _, m := range ms {
		if err := m.leave(); err != nil {
			t.Fatal(err)
		}
	}
}
