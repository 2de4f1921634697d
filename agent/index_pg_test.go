package agent_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
)

// openPostgres opens a metadata store on dsn, closed at the end of t.
func openPostgres(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, postgres.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// idleLoad is 100 subscriptions over 1,000 partitions and three long
// polls of a topic nobody produces to, on an agent over PostgreSQL whose
// statements stmts counts (while on); dbStatements is what PostgreSQL
// itself counted in the database (autovacuum's included). It returns once
// every reader made its first read.
type idleLoad struct {
	stmts        *stmtCounter
	meta         *countingMeta
	dbStatements func() int64
}

const (
	idlePartitions = 1000
	idleSubs       = 100
	idleLongPolls  = 3
)

func startIdleLoad(tb testing.TB) idleLoad {
	tb.Helper()
	testenv.PostgresAdminURL(tb)
	dsn := testenv.Postgres(tb)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	// Idle connections close quickly, so their statement counts reach
	// pg_stat_database at once (a backend reports them at exit).
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conn_idle_time", "200ms")
	q.Set("pool_health_check_period", "100ms")
	u.RawQuery = q.Encode()
	stmts := &stmtCounter{}
	opts := postgres.DefaultOptions()
	opts.Tracer = stmts
	ps, err := postgres.Open(context.Background(), u.String(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ps.Close() })
	meta := &countingMeta{Store: ps}
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	acfg.TopicCacheTTL = 200 * time.Millisecond // expires many times while idle
	n := startNode(tb, meta, objectstore.NewMemory(), acfg, bcfg)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() { cancel(); wg.Wait() })
	if _, err := n.c.CreateTopic(ctx, "idle", idlePartitions, nil); err != nil {
		tb.Fatal(err)
	}
	for s := 0; s < idleSubs; s++ {
		parts := make([]int32, idlePartitions/idleSubs)
		for i := range parts {
			parts[i] = int32(s*len(parts) + i)
		}
		wg.Go(func() {
			err := n.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "idle", Partitions: parts}, func(*floev1.SubscribeResponse) error { return nil })
			if ctx.Err() == nil {
				tb.Errorf("subscription ended: %v", err)
			}
		})
	}
	var polls atomic.Int64 // long polls answered
	for p := int32(0); p < idleLongPolls; p++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := n.c.Fetch(ctx, "idle", p, 0, 0, 1000); err != nil && ctx.Err() == nil {
					tb.Errorf("long poll: %v", err)
					return
				}
				polls.Add(1)
			}
		})
	}
	admin, err := pgx.Connect(ctx, testenv.PostgresAdminURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { admin.Close(context.Background()) })
	// Started: every partition has its reader, and each long poll was
	// answered once (its topic resolved, its first read made).
	for deadline := time.Now().Add(60 * time.Second); agent.SubscribedPartitions(n.ag) < idlePartitions || polls.Load() < idleLongPolls; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("the idle readers did not start within 60 s: %d partitions subscribed, %d long polls answered", agent.SubscribedPartitions(n.ag), polls.Load())
		}
	}
	return idleLoad{stmts: stmts, meta: meta, dbStatements: func() int64 {
		var n int64
		if err := admin.QueryRow(context.Background(),
			`SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, cfg.Database).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		return n
	}}
}

// 100 idle subscriptions over 1,000 partitions, and three idle long polls,
// cost PostgreSQL no statements once they have started: they wait for
// commit notices, the read index answers their re-checks, and the topic
// a long poll names is not looked up again while the index watches it,
// however short the topic cache's TTL. The count is exact: the agent's
// store sends no statement at all while they wait (its tracer sees every
// one), so the window's length does not matter (the rate, with what
// autovacuum does in the database, is BenchmarkIdleStatements'). Before
// the index, every idle follower ran FindBatches every PollInterval
// (about 1,000 statements per second here); before the watched topics
// outlived the TTL, every long poll re-resolved its topic once per TTL.
func TestIdleSubscriptionsCostNoStatements(t *testing.T) {
	l := startIdleLoad(t)
	time.Sleep(time.Second) // the first reads' answers settle (the window is not a bound: any window must see none)
	f0, d0, s0, o0 := l.meta.find.Load(), l.meta.describe.Load(), l.meta.states.Load(), l.meta.listOffset.Load()
	l.stmts.on.Store(1)
	time.Sleep(2 * time.Second) // several TTLs and long polls
	l.stmts.on.Store(0)
	finds, describes, states, lists := l.meta.find.Load()-f0, l.meta.describe.Load()-d0, l.meta.states.Load()-s0, l.meta.listOffset.Load()-o0
	t.Logf("in the window the agent made %d FindBatches, %d DescribeTopic, %d PartitionStates, %d ListOffset calls, %d statements",
		finds, describes, states, lists, l.stmts.n.Load())
	if finds+describes+lists != 0 {
		t.Errorf("%d FindBatches, %d DescribeTopic and %d ListOffset while idle, want none", finds, describes, lists)
	}
	if n := l.stmts.n.Load(); n != 0 {
		t.Errorf("the agent sent PostgreSQL %d statements while idle, want none", n)
	}
}

// BenchmarkIdleStatements measures what PostgreSQL itself counts in the
// database (autovacuum's transactions too) per second while the agent's
// readers are idle (TestIdleSubscriptionsCostNoStatements holds the
// agent's own count at exactly none). Before the read index this was
// about 1,000/s; 7.5/s before the watched topics outlived the TTL.
func BenchmarkIdleStatements(b *testing.B) {
	l := startIdleLoad(b)
	time.Sleep(time.Second)
	b.ResetTimer()
	before, start := l.dbStatements(), time.Now()
	l.stmts.on.Store(1)
	for range b.N {
		time.Sleep(100 * time.Millisecond)
	}
	l.stmts.on.Store(0)
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(l.dbStatements()-before)/secs, "db-statements/s")
	b.ReportMetric(float64(l.stmts.n.Load())/secs, "agent-statements/s")
}

// A reader on one agent wakes within one commit made through another
// agent on the same PostgreSQL, with no polling to fall back on: a tailing
// subscription and a long poll both get the record.
func TestReaderOnAnotherAgentWakes(t *testing.T) {
	dsn := testenv.Postgres(t)
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 2 * time.Millisecond
	acfg.PollInterval = time.Hour // only notices may wake readers
	a := startNode(t, openPostgres(t, dsn), store, acfg, bcfg)
	b := startNode(t, openPostgres(t, dsn), store, acfg, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	got := make(chan *floev1.Record, 16)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		_ = b.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0},
			Start: &floev1.StartPosition{Position: &floev1.StartPosition_Offset{Offset: 0}}},
			func(r *floev1.SubscribeResponse) error {
				for _, rec := range r.GetRecords() {
					got <- rec
				}
				return nil
			})
	})
	for i := 0; i < 5; i++ {
		time.Sleep(50 * time.Millisecond) // let the reader settle at the tail
		polled := make(chan *floev1.FetchResponse, 1)
		wg.Go(func() {
			f, err := b.c.Fetch(ctx, "t", 1, int64(i), 0, 15000)
			if err != nil {
				t.Error(err)
			}
			polled <- f
		})
		time.Sleep(50 * time.Millisecond)
		v := []byte(fmt.Sprint("r", i))
		if _, err := a.c.Produce(ctx, "t", 0, client.Value(nil, v)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.c.Produce(ctx, "t", 1, client.Value(nil, v)); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.GetOffset() != int64(i) || string(r.GetValue()) != string(v) {
				t.Fatalf("subscription got %v, want %s at %d", r, v, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the subscription on the other agent did not wake for record %d", i)
		}
		select {
		case f := <-polled:
			if len(f.GetRecords()) != 1 || string(f.GetRecords()[0].GetValue()) != string(v) {
				t.Fatalf("long poll got %v, want %s", f, v)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the long poll on the other agent did not wake for record %d", i)
		}
	}
}
