package agent_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
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
func openPostgres(t *testing.T, dsn string) *postgres.Store {
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

// statements returns the transactions PostgreSQL has counted in database
// db (every statement outside an explicit transaction is one).
func statements(t *testing.T, admin *pgx.Conn, db string) int64 {
	t.Helper()
	var n int64
	err := admin.QueryRow(context.Background(),
		`SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, db).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// 100 idle subscriptions over 1,000 partitions, and three idle long polls,
// cost PostgreSQL no statements once they have started: they wait for
// commit notices, the read index answers their re-checks, and the topic
// a long poll names is not looked up again while the index watches it,
// however short the topic cache's TTL. Before the index, every idle
// follower ran FindBatches every PollInterval (about 1,000 statements per
// second here); before the watched topics outlived the TTL, every long
// poll re-resolved its topic once per TTL (0.8 statements/s here with the
// default TTL, several per second with this test's).
func TestIdleSubscriptionsCostNoStatements(t *testing.T) {
	const (
		partitions = 1000
		subs       = 100
		longPolls  = 3
		window     = 4 * time.Second
	)
	testenv.PostgresAdminURL(t)
	dsn := testenv.Postgres(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// Idle connections close quickly, so their statement counts reach
	// pg_stat_database at once (a backend reports them at exit).
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conn_idle_time", "200ms")
	q.Set("pool_health_check_period", "100ms")
	u.RawQuery = q.Encode()
	meta := &countingMeta{Store: openPostgres(t, u.String())}
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	acfg.TopicCacheTTL = 200 * time.Millisecond // expires many times in the window
	n := startNode(t, meta, objectstore.NewMemory(), acfg, bcfg)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := n.c.CreateTopic(ctx, "idle", partitions, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for s := 0; s < subs; s++ {
		parts := make([]int32, partitions/subs)
		for i := range parts {
			parts[i] = int32(s*len(parts) + i)
		}
		wg.Go(func() {
			err := n.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "idle", Partitions: parts}, func(*floev1.SubscribeResponse) error { return nil })
			if ctx.Err() == nil {
				t.Errorf("subscription ended: %v", err)
			}
		})
	}
	for p := int32(0); p < longPolls; p++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := n.c.Fetch(ctx, "idle", p, 0, 0, 1000); err != nil && ctx.Err() == nil {
					t.Errorf("long poll: %v", err)
					return
				}
			}
		})
	}
	admin, err := pgx.Connect(ctx, testenv.PostgresAdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	time.Sleep(3 * time.Second) // subscriptions start; their first reads are queries
	before := statements(t, admin, cfg.Database)
	f0, d0, s0, l0 := meta.find.Load(), meta.describe.Load(), meta.states.Load(), meta.listOffset.Load()
	time.Sleep(window)
	after := statements(t, admin, cfg.Database)
	finds, describes, states, lists := meta.find.Load()-f0, meta.describe.Load()-d0, meta.states.Load()-s0, meta.listOffset.Load()-l0
	t.Logf("in the window the agent made %d FindBatches, %d DescribeTopic (topic cache), %d PartitionStates, %d ListOffset calls",
		finds, describes, states, lists)
	rate := float64(after-before) / window.Seconds()
	t.Logf("PostgreSQL statements with %d idle subscriptions over %d partitions and %d long polls: %.1f/s (%d in %v)",
		subs, partitions, longPolls, rate, after-before, window)
	// The agent's own calls are exact: none. The database's count also
	// holds what autovacuum may do in it (a few transactions, after the
	// 1,000 partition rows), hence the margin; before, this test measured
	// 7.5/s (2.2/s with the default TTL).
	if finds+describes+lists != 0 {
		t.Errorf("%d FindBatches, %d DescribeTopic and %d ListOffset while idle, want none", finds, describes, lists)
	}
	if rate >= 2 {
		t.Fatalf("%.1f statements/s while idle, want (almost) none (< 2/s)", rate)
	}
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
