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

// TestHeartbeatFastPathHeldToRule: on generated group states, whenever the
// one-statement heartbeat (heartbeatFastSQL) applies, group.Heartbeat on
// the same state changes nothing but the member's last heartbeat and
// session timeout and answers the same (epoch, assignment, nothing
// pending); each case runs in a transaction rolled back after.
func TestHeartbeatFastPathHeldToRule(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var topics []metadata.Topic
	for _, n := range []string{"ha", "hb"} {
		tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: n, Partitions: 2})
		if err != nil {
			t.Fatal(err)
		}
		topics = append(topics, tp)
	}
	live := map[string]group.Topic{}
	var gts []group.Topic
	for _, tp := range topics {
		gt := group.Topic{ID: tp.ID, Name: tp.Name, Partitions: tp.Partitions}
		live[tp.Name] = gt
		gts = append(gts, gt)
	}
	all := []group.TP{{TopicID: topics[0].ID, Partition: 0}, {TopicID: topics[0].ID, Partition: 1},
		{TopicID: topics[1].ID, Partition: 0}, {TopicID: topics[1].ID, Partition: 1}}
	rng := rand.New(rand.NewPCG(3, 4))
	some := func() []group.TP {
		var out []group.TP
		for _, p := range all {
			if rng.IntN(2) == 0 {
				out = append(out, p)
			}
		}
		return out
	}
	fast, slow := 0, 0
	for i := range 400 {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var now int64
			if err := tx.QueryRow(ctx, "SELECT "+nowMs).Scan(&now); err != nil {
				return err
			}
			name := fmt.Sprintf("h%03d", i)
			sig := group.TopicsSignature(gts)
			if rng.IntN(6) == 0 {
				sig = group.TopicsSignature(gts[:1]) // stale: a topic appeared
			}
			if _, err := tx.Exec(ctx, `INSERT INTO consumer_groups (name, group_epoch, topic_names, topics_sig) VALUES ($1, 7, 'ha,hb', $2)`,
				name, sig); err != nil {
				return err
			}
			for j := range 1 + rng.IntN(2) {
				target := some()
				assigned := target
				if rng.IntN(4) == 0 {
					assigned = some()
				}
				revoking, revSince := "", int64(0)
				if rng.IntN(5) == 0 {
					revoking, revSince = group.EncodeTPs(some()), now-int64(rng.IntN(2))*60_000
				}
				if _, err := tx.Exec(ctx, `INSERT INTO group_members (group_name, member_id, member_epoch, subscription,
					assigned, revoking, target, revoking_since, session_timeout_ms, last_heartbeat, joined_at)
					VALUES ($1, $2, $3, 'ha,hb', $4, $5, $6, $7, 30000, $8, 0)`, name, fmt.Sprintf("m%d", j), 6+rng.IntN(2),
					group.EncodeTPs(assigned), revoking, group.EncodeTPs(target), revSince, now-int64(rng.IntN(2))*60_000); err != nil {
					return err
				}
			}
			req := metadata.HeartbeatRequest{Group: name, MemberID: "m0", MemberEpoch: int32(6 + rng.IntN(2)),
				SessionTimeout: 30 * time.Second}
			if rng.IntN(3) == 0 {
				req.Subscription = []string{"ha", "hb"}
			} else if rng.IntN(6) == 0 {
				req.Subscription = []string{"ha"}
			}
			g, at, err := loadGroup(ctx, tx, name, false)
			if err != nil {
				return err
			}
			if _, self := gMember(g, "m0"); self != nil {
				req.Owned = append(append([]group.TP{}, self.Assigned...), self.Revoking...)
			}
			var sub *string
			if req.Subscription != nil {
				j := strings.Join(group.Canonical(req.Subscription), ",")
				sub = &j
			}
			var assigned string
			var epoch int32
			ferr := tx.QueryRow(ctx, heartbeatFastSQL, req.Group, req.MemberID, req.MemberEpoch, int64(30000), sub).Scan(&assigned, &epoch)
			if ferr == pgx.ErrNoRows {
				slow++
				return errDryRun
			}
			if ferr != nil {
				return ferr
			}
			fast++
			before := *mustMember(t, g, "m0")
			out, err := group.Heartbeat(g, req, live, at, func() string { return "new" })
			if err != nil {
				t.Errorf("case %d: the fast path answered, the rule refuses: %v", i, err)
				return errDryRun
			}
			after := *mustMember(t, g, "m0")
			after.LastHeartbeat, after.SessionTimeoutMs = before.LastHeartbeat, before.SessionTimeoutMs
			if out.GroupChanged || len(out.Deleted) != 0 || len(out.Upsert) != 1 || fmt.Sprint(after) != fmt.Sprint(before) ||
				out.Response.MemberEpoch != epoch || group.EncodeTPs(out.Response.Assigned) != assigned || out.Response.Pending != 0 {
				t.Errorf("case %d: the fast path answered epoch %d, %q; the rule changes more: %+v\nbefore %+v\nafter  %+v",
					i, epoch, assigned, out, before, after)
			}
			return errDryRun
		})
		if err != nil && err != errDryRun {
			t.Fatal(err)
		}
	}
	if fast < 20 || slow < 20 {
		t.Fatalf("generated cases not varied: %d fast, %d slow", fast, slow)
	}
	t.Logf("%d cases on the fast path (the rule agrees), %d not", fast, slow)
}

func gMember(g *group.Group, id string) (int, *group.Member) {
	for i, m := range g.Members {
		if m.ID == id {
			return i, m
		}
	}
	return -1, nil
}

func mustMember(t *testing.T, g *group.Group, id string) *group.Member {
	t.Helper()
	_, m := gMember(g, id)
	if m == nil {
		t.Fatalf("no member %s", id)
	}
	return m
}
