package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// open opens a store on dsn, closed at the end of t.
func open(t *testing.T, dsn string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn, DefaultOptions())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	testenv.PostgresAdminURL(t) // start the server before the suite's leak checks begin
	metadatatest.Run(t, func(t *testing.T) metadata.Store {
		return open(t, testenv.Postgres(t))
	})
}

// TestNoticesAcrossStores commits through one store and listens through
// another on the same database, as two agents do.
func TestNoticesAcrossStores(t *testing.T) {
	dsn := testenv.Postgres(t)
	before := goleak.IgnoreCurrent()
	a, b := open(t, dsn), open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := b.Notices(ctx)
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	tp, err := a.CreateTopic(ctx, metadata.TopicSpec{Name: "shared", Partitions: 2})
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if _, err := b.DescribeTopic(ctx, "shared"); err != nil {
		t.Fatalf("the other store does not see the topic: %v", err)
	}
	res, err := a.CommitFile(ctx, metadata.FileCommit{Key: "k1", Size: 100, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, Partition: 1, ByteLength: 10, RecordCount: 3, ProducerID: -1, BaseSequence: metadata.NoSequence},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("CommitFile: %v %+v", err, res)
	}
	metadatatest.AwaitHighWatermarks(t, ch, map[metadata.PartitionNotice]bool{{TopicID: tp.ID, Partition: 1, HighWatermark: 3}: true},
		func() bool { return true })
	a.Close()
	b.Close()
	goleak.VerifyNone(t, before)
}

// TestNoticeListenerReconnects kills the listener's connection: the store
// reconnects, announces an All notice, and later commits are announced.
func TestNoticeListenerReconnects(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := s.Notices(ctx)
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	var killed int
	err = s.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", killed, err)
	}
	select {
	case n := <-ch:
		if !n.All {
			t.Fatalf("first notice after the reconnect = %+v, want All", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no All notice within 5s of losing the listener")
	}
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "after", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitFile(ctx, metadata.FileCommit{Key: "k", Size: 10, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, ByteLength: 10, RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence},
	}}); err != nil {
		t.Fatal(err)
	}
	metadatatest.AwaitHighWatermarks(t, ch, map[metadata.PartitionNotice]bool{{TopicID: tp.ID, HighWatermark: 1}: true},
		func() bool { return true })
}

// TestLargeNoticeIsSplit commits to so many partitions that one payload
// would pass NOTIFY's limit: the announcement comes in several notices that
// together name every partition with its new high watermark.
func TestLargeNoticeIsSplit(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "wide", Partitions: 2000})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := metadata.FileCommit{Key: "wide", Size: 2000}
	for p := range int32(2000) {
		f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: tp.ID, Partition: p, ByteOffset: int64(p), ByteLength: 1,
			RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence})
	}
	if _, err := s.CommitFile(ctx, f); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	notices := 0
	for len(seen) < 2000 {
		select {
		case n := <-ch:
			notices++
			if n.All {
				t.Fatalf("notice %d is All: the payload was not split", notices)
			}
			for _, p := range n.Partitions {
				if p.TopicID != tp.ID || p.HighWatermark != 1 {
					t.Fatalf("notice item %+v", p)
				}
				seen[p.Partition] = true
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 2000 partitions announced in %d notices", len(seen), notices)
		}
	}
	if notices < 2 {
		t.Fatalf("2000 partitions in %d notice", notices)
	}
}

func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	opts := DefaultOptions()
	opts.ConnectTimeout = 2 * time.Second
	// A port nothing listens on: the server of testenv is up, this is not it.
	_, err := Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable", opts)
	if err == nil || !strings.HasPrefix(err.Error(), "metadata: connect postgres:") {
		t.Fatalf("Open(unreachable) = %v, want a metadata: connect postgres: error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open(unreachable) took %v", d)
	}
	if _, err := Open(ctx, "postgres://%zz", opts); err == nil {
		t.Error("Open(bad dsn) succeeded")
	}
	opts.MaxConns = -1
	if _, err := Open(ctx, "postgres://127.0.0.1/x", opts); err == nil || !strings.Contains(err.Error(), "MaxConns") {
		t.Errorf("Open(MaxConns -1) = %v, want an error naming MaxConns", err)
	}
}

// TestConcurrentOpenMigrates opens several stores on a new database at
// once: the migrations run exactly once.
func TestConcurrentOpenMigrates(t *testing.T) {
	dsn := testenv.Postgres(t)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, dsn, DefaultOptions())
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, max int
	if err := conn.QueryRow(ctx, "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != max || n < 2 {
		t.Errorf("schema_migrations has %d rows up to version %d", n, max)
	}
}

func TestParsePayload(t *testing.T) {
	n := ParsePayload("7:0:15,7:3:2,9:12:100")
	want := []metadata.PartitionNotice{{TopicID: 7, HighWatermark: 15}, {TopicID: 7, Partition: 3, HighWatermark: 2}, {TopicID: 9, Partition: 12, HighWatermark: 100}}
	if n.All || len(n.Partitions) != 3 || n.Partitions[0] != want[0] || n.Partitions[1] != want[1] || n.Partitions[2] != want[2] {
		t.Errorf("ParsePayload = %+v", n)
	}
	for _, p := range []string{"*", "", "1:2", "a:b:c", "1:2:3,", "1:2:3:4"} {
		if !ParsePayload(p).All {
			t.Errorf("ParsePayload(%q) is not All", p)
		}
	}
}

// TestLockOrderAnyPlan commits files naming the same partitions in random
// orders, concurrently, on a database whose planner settings push every
// statement to hash joins and sequential scans: the commit function's lock
// order must not depend on the plan.
func TestLockOrderAnyPlan(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	for _, setting := range []string{"enable_nestloop", "enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan", "enable_mergejoin"} {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET "+setting+" = off"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	metadatatest.ConcurrentSamePartitions(t, open(t, dsn))
}
