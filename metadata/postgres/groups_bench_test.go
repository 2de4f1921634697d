package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
)

// stmtCounter counts what the store sends: statements (a batch's count
// one each) and round trips (a batch is one).
type stmtCounter struct {
	statements, roundTrips atomic.Int64
}

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	c.roundTrips.Add(1)
	return ctx
}
func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *stmtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.roundTrips.Add(1)
	return ctx
}
func (c *stmtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.statements.Add(1)
}
func (c *stmtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// countedStore opens a store whose statements are counted.
func countedStore(tb testing.TB, dsn string) (*Store, *stmtCounter) {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dsn, DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	c := &stmtCounter{}
	cfg.ConnConfig.Tracer = c
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	orig := s.pool
	s.pool = pool // the notifier keeps the original pool, closed below
	tb.Cleanup(func() {
		s.Close()
		orig.Close()
	})
	return s, c
}

// stableMember joins a one-member group on topic and heartbeats until the
// member is stable; it returns the member's last answer.
func stableMember(tb testing.TB, s *Store, grp, topic string) metadata.HeartbeatResponse {
	tb.Helper()
	ctx := context.Background()
	r, err := s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: grp, MemberID: "m-" + grp, Subscription: []string{topic}})
	if err != nil {
		tb.Fatal(err)
	}
	r, err = s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: grp, MemberID: r.MemberID, MemberEpoch: r.MemberEpoch, Owned: r.Assigned})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestGroupStatementsPerHeartbeat checks the cost the issue sets: a
// heartbeat of a stable member, and a commit, are one statement (one round
// trip, no BEGIN/COMMIT).
func TestGroupStatementsPerHeartbeat(t *testing.T) {
	s, c := countedStore(t, testenv.Postgres(t))
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "hb", Partitions: 8})
	if err != nil {
		t.Fatal(err)
	}
	r := stableMember(t, s, "g", "hb")
	const n = 50
	st0, rt0 := c.statements.Load(), c.roundTrips.Load()
	for range n {
		r2, err := s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: "g", MemberID: r.MemberID, MemberEpoch: r.MemberEpoch,
			Owned: r.Assigned, Subscription: []string{"hb"}})
		if err != nil || r2.MemberEpoch != r.MemberEpoch || len(r2.Assigned) != 8 {
			t.Fatalf("heartbeat: %+v, %v", r2, err)
		}
	}
	if st, rt := c.statements.Load()-st0, c.roundTrips.Load()-rt0; st != n || rt != n {
		t.Errorf("%d stable heartbeats: %d statements, %d round trips; want %d and %d", n, st, rt, n, n)
	}
	st0 = c.statements.Load()
	if err := s.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "g", MemberID: r.MemberID, MemberEpoch: r.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tp.ID, Partition: 3, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	if st := c.statements.Load() - st0; st != 1 {
		t.Errorf("commit: %d statements, want 1", st)
	}
	// The fast path steps aside when something changed: a new topic of
	// the subscription appears and the member learns it on its next beat.
	if _, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "hb2", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	r3, err := s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: "g", MemberID: r.MemberID, MemberEpoch: r.MemberEpoch,
		Owned: r.Assigned, Subscription: []string{"hb", "hb2"}})
	if err != nil || len(r3.Assigned) != 10 || r3.MemberEpoch <= r.MemberEpoch {
		t.Fatalf("after subscribing to hb2: %+v, %v", r3, err)
	}
}

// BenchmarkGroupHeartbeat: 1,000 one-member groups, each heartbeating as a
// stable member, one at a time and 16 at a time (the issue's "1,000 groups
// heartbeating at once"); then commits of one position each. Reports p50/p99 latency and
// statements and round trips per operation, counted at the client, and the
// median over a one-row INSERT's (one at a time, so the ratio includes the
// queueing of 16 concurrent callers on 2 cores).
//
//	go test -run '^$' -bench BenchmarkGroupHeartbeat -benchtime 5000x ./metadata/postgres/
func BenchmarkGroupHeartbeat(b *testing.B) {
	s, c := countedStore(b, testenv.Postgres(b))
	ctx := context.Background()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "hb", Partitions: 4})
	if err != nil {
		b.Fatal(err)
	}
	// The limit: a one-row INSERT round trip, measured in the same run.
	limit := rawCommitMedian(b, s, 300)
	b.Logf("limit: one-row INSERT round trip median %v", limit)
	const groups = 1000
	members := make([]metadata.HeartbeatResponse, groups)
	for i := range groups {
		members[i] = stableMember(b, s, fmt.Sprintf("g%04d", i), "hb")
	}
	run := func(b *testing.B, conc int, op func(i int) error) {
		var mu sync.Mutex
		times := make([]time.Duration, 0, b.N)
		var next atomic.Int64
		st0, rt0 := c.statements.Load(), c.roundTrips.Load()
		b.ResetTimer()
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= b.N {
						return
					}
					start := time.Now()
					if err := op(i % groups); err != nil {
						b.Error(err)
						return
					}
					d := time.Since(start)
					mu.Lock()
					times = append(times, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(c.statements.Load()-st0)/float64(b.N), "stmts/op")
		b.ReportMetric(float64(c.roundTrips.Load()-rt0)/float64(b.N), "roundtrips/op")
		b.ReportMetric(float64(metadatatest.Percentile(times, 50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(metadatatest.Percentile(times, 99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(metadatatest.Percentile(times, 50))/float64(limit), "p50-x-insert")
	}
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("heartbeat/c=%d", conc), func(b *testing.B) {
			run(b, conc, func(i int) error {
				m := members[i]
				_, err := s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: fmt.Sprintf("g%04d", i), MemberID: m.MemberID,
					MemberEpoch: m.MemberEpoch, Owned: m.Assigned})
				return err
			})
		})
		b.Run(fmt.Sprintf("commit/c=%d", conc), func(b *testing.B) {
			run(b, conc, func(i int) error {
				m := members[i]
				return s.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: fmt.Sprintf("g%04d", i), MemberID: m.MemberID,
					MemberEpoch: m.MemberEpoch, Offsets: []metadata.OffsetCommit{{TopicID: tp.ID, Partition: m.Assigned[0].Partition,
						Offset: 0}}})
			})
		})
	}
}

// BenchmarkGroupRebalance: 100 members over 1,000 partitions, each
// heartbeating at the interval the store advertises (session timeout 3 s,
// interval 1 s), on PostgreSQL with real clocks. Reports how long after a
// join and after a member's death (it stops heartbeating) the group is
// stable again, and that time over the session timeout.
//
//	go test -run '^$' -bench BenchmarkGroupRebalance -benchtime 1x ./metadata/postgres/
func BenchmarkGroupRebalance(b *testing.B) {
	s, err := Open(context.Background(), testenv.Postgres(b), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTopic(context.Background(), metadata.TopicSpec{Name: "big", Partitions: 1000}); err != nil {
		b.Fatal(err)
	}
	const members, timeout = 100, 3 * time.Second
	stable := func(ctx context.Context, grp string, want int) time.Duration {
		start := time.Now()
		for {
			d, err := s.DescribeGroup(ctx, grp)
			if err != nil {
				b.Fatal(err)
			}
			if d.State == metadata.GroupStable && len(d.Members) == want {
				return time.Since(start)
			}
			if time.Since(start) > 10*timeout {
				b.Fatalf("not stable after %v: %d members", 10*timeout, len(d.Members))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for n := range b.N {
		grp := fmt.Sprintf("big%d", n)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		kill := make([]chan struct{}, members)
		run := func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("m%03d", i)
			var epoch int32
			var owned []metadata.TopicPartition
			for {
				r, err := s.Heartbeat(ctx, metadata.HeartbeatRequest{Group: grp, MemberID: id, MemberEpoch: epoch,
					Subscription: []string{"big"}, Owned: owned, SessionTimeout: timeout})
				if err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					return
				}
				epoch, owned = r.MemberEpoch, r.Assigned // releases at once
				select {
				case <-ctx.Done():
					return
				case <-kill[i]:
					return
				case <-time.After(r.HeartbeatInterval):
				}
			}
		}
		for i := range members - 1 {
			kill[i] = make(chan struct{})
			wg.Add(1)
			go run(i)
		}
		first := stable(ctx, grp, members-1)
		kill[members-1] = make(chan struct{})
		wg.Add(1)
		go run(members - 1)
		join := stable(ctx, grp, members)
		close(kill[37])
		death := stable(ctx, grp, members-1)
		b.ReportMetric(float64(first.Milliseconds()), "first-stable-ms")
		b.ReportMetric(float64(join.Milliseconds()), "join-ms")
		b.ReportMetric(float64(death.Milliseconds()), "death-ms")
		b.ReportMetric(float64(death)/float64(timeout), "death-x-session")
		cancel()
		wg.Wait()
	}
}
