package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
)

// TestCommitFastPathHeldToRule: on generated group states, the one-statement
// commit (commitFastSQL) writes exactly when package group's rule accepts
// the commit and no member is to be fenced; whatever it refuses goes to
// the Go path. Times sit well away from the expiry bounds, so the two
// clocks read (the statement's and loadGroup's) agree.
func TestCommitFastPathHeldToRule(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tpc, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "fast", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	var now int64
	if err := s.pool.QueryRow(ctx, "SELECT "+nowMs).Scan(&now); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tps := func() []group.TP {
		var out []group.TP
		for p := range int32(4) {
			if rng.IntN(3) == 0 {
				out = append(out, group.TP{TopicID: tpc.ID, Partition: p})
			}
		}
		return out
	}
	accepted, refused := 0, 0
	for i := range 800 {
		name := fmt.Sprintf("g%03d", i)
		if _, err := s.pool.Exec(ctx, "INSERT INTO consumer_groups (name, group_epoch) VALUES ($1, 5)", name); err != nil {
			t.Fatal(err)
		}
		members := rng.IntN(3)
		for j := range members {
			hb := now - int64(rng.IntN(2))*60_000 // fresh, or a minute old (expired at 30 s)
			var revSince int64
			revoking := []group.TP{}
			if rng.IntN(3) == 0 {
				revoking = tps()
				revSince = now - int64(rng.IntN(2))*60_000
			}
			if _, err := s.pool.Exec(ctx, `INSERT INTO group_members (group_name, member_id, member_epoch, subscription,
				assigned, revoking, target, revoking_since, session_timeout_ms, last_heartbeat, joined_at)
				VALUES ($1, $2, $3, 'fast', $4, $5, '', $6, 30000, $7, 0)`, name, fmt.Sprintf("m%d", j), 4+rng.IntN(2),
				group.EncodeTPs(tps()), group.EncodeTPs(revoking), revSince, hb); err != nil {
				t.Fatal(err)
			}
		}
		req := metadata.CommitOffsetsRequest{Group: name, MemberEpoch: int32(4 + rng.IntN(2))}
		if r := rng.IntN(4); r > 0 {
			req.MemberID = fmt.Sprintf("m%d", r-1) // maybe not a member
		}
		for _, p := range tps() {
			req.Offsets = append(req.Offsets, metadata.OffsetCommit{TopicID: p.TopicID, Partition: p.Partition, Offset: 1})
		}
		if rng.IntN(8) == 0 {
			req.Offsets = append(req.Offsets, metadata.OffsetCommit{TopicID: tpc.ID, Partition: 9, Offset: 1}) // missing
		}
		if len(req.Offsets) == 0 {
			req.Offsets = []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 1}}
		}
		var g *group.Group
		var at int64
		if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			g, at, err = loadGroup(ctx, tx, name, false)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		missing := false
		for _, o := range req.Offsets {
			missing = missing || o.Partition >= 4
		}
		want := !missing && !group.AnyExpired(g, at) && group.CheckCommit(g, req, at) == nil
		ts, ps, os, mds := commitArgs(req)
		var written int64
		if err := s.pool.QueryRow(ctx, commitFastSQL, req.Group, req.MemberID, req.MemberEpoch, ts, ps, os, mds).Scan(&written); err != nil {
			t.Fatal(err)
		}
		if got := written == int64(len(req.Offsets)); got != want || written != 0 && !got {
			var ms []string
			for _, m := range g.Members {
				ms = append(ms, fmt.Sprintf("%+v", *m))
			}
			t.Fatalf("case %d: fast path wrote %d of %d, rule says accept=%v\nrequest %+v\nmembers %s", i, written,
				len(req.Offsets), want, req, strings.Join(ms, "\n"))
		}
		if want {
			accepted++
		} else {
			refused++
		}
	}
	if accepted < 20 || refused < 20 {
		t.Fatalf("generated cases not varied: %d accepted, %d refused", accepted, refused)
	}
	t.Logf("%d accepted, %d refused, fast path and rule agree", accepted, refused)
}
