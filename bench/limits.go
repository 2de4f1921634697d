package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/floe-broker/floe/objectstore"
)

// RawOps is the throughput and latency of one raw operation.
type RawOps struct {
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"`
	Latency   Summary `json:"latency"`
}

// StoreLimits is what the object store allows: PUTs and GETs of whole
// objects of one size, with the agents' upload concurrency.
type StoreLimits struct {
	Store       string  `json:"store"`
	ObjectBytes int     `json:"object_bytes"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
	Put         RawOps  `json:"put"`
	Get         RawOps  `json:"get"`
}

// CommitLimits is what the metadata store allows: the round trip of a
// trivial one-row INSERT transaction, one at a time.
type CommitLimits struct {
	Store     string  `json:"store"`
	Commits   int64   `json:"commits"`
	PerSecond float64 `json:"per_second"`
	Latency   Summary `json:"latency"`
}

// ProbeStore PUTs objects of objectBytes with concurrency workers for d,
// then GETs them back (whole, cycling) for d, then deletes them. Keys are
// under "bench-raw/".
func ProbeStore(ctx context.Context, store objectstore.Store, name string, objectBytes, concurrency int, d time.Duration) (StoreLimits, error) {
	if objectBytes < 1 || concurrency < 1 || d <= 0 {
		return StoreLimits{}, fmt.Errorf("bench: raw store probe needs a positive object size, concurrency and duration (got %d, %d, %v)", objectBytes, concurrency, d)
	}
	res := StoreLimits{Store: name, ObjectBytes: objectBytes, Concurrency: concurrency, Seconds: d.Seconds()}
	data := MakeValue(objectBytes, 0, 0)
	prefix := fmt.Sprintf("bench-raw/%d", time.Now().UnixNano())
	var (
		seq  atomic.Int64
		mu   sync.Mutex
		keys []string
	)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, k := range keys {
			_ = store.Delete(cctx, k)
		}
	}()
	put := func(ctx context.Context) error {
		i := seq.Add(1)
		key := fmt.Sprintf("%s/%02x/%d", prefix, i%256, i)
		if err := store.Put(ctx, key, data, objectstore.PutOptions{IfAbsent: true}); err != nil {
			return err
		}
		mu.Lock()
		keys = append(keys, key)
		mu.Unlock()
		return nil
	}
	var err error
	if res.Put, err = hammer(ctx, concurrency, d, objectBytes, put); err != nil {
		return res, fmt.Errorf("bench: raw PUT: %w", err)
	}
	if len(keys) == 0 {
		return res, errors.New("bench: raw PUT stored nothing")
	}
	var rd atomic.Int64
	get := func(ctx context.Context) error {
		k := keys[int(rd.Add(1))%len(keys)]
		b, err := store.Get(ctx, k, 0, -1)
		if err != nil {
			return err
		}
		if len(b) != objectBytes {
			return fmt.Errorf("GET %s returned %d bytes, want %d", k, len(b), objectBytes)
		}
		return nil
	}
	if res.Get, err = hammer(ctx, concurrency, d, objectBytes, get); err != nil {
		return res, fmt.Errorf("bench: raw GET: %w", err)
	}
	return res, nil
}

// hammer runs op from workers goroutines for d.
func hammer(ctx context.Context, workers int, d time.Duration, bytesPerOp int, op func(context.Context) error) (RawOps, error) {
	lat := NewHistogram()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		ops      atomic.Int64
	)
	start := time.Now()
	deadline := start.Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t := time.Now()
				if err := op(ctx); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				lat.Record(time.Since(t))
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return RawOps{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return RawOps{}, err
	}
	el := time.Since(start).Seconds()
	n := ops.Load()
	return RawOps{Ops: n, OpsPerSec: float64(n) / el, MBPerSec: float64(n) * float64(bytesPerOp) / el / 1e6, Latency: lat.Summary()}, nil
}

// Committer runs one trivial durable transaction per call.
type Committer interface {
	Commit(ctx context.Context) error
	Close() error
}

// ProbeCommit commits one transaction after another for d.
func ProbeCommit(ctx context.Context, c Committer, name string, d time.Duration) (CommitLimits, error) {
	ops, err := hammer(ctx, 1, d, 0, c.Commit)
	if err != nil {
		return CommitLimits{}, fmt.Errorf("bench: raw commit: %w", err)
	}
	return CommitLimits{Store: name, Commits: ops.Ops, PerSecond: ops.OpsPerSec, Latency: ops.Latency}, nil
}

const probeTable = "floe_bench_commit_probe"

type pgCommitter struct{ conn *pgx.Conn }

// OpenPostgresCommitter connects to url and creates the probe table
// (floe_bench_commit_probe). Each Commit is one autocommitted one-row
// INSERT: one round trip and one WAL flush.
func OpenPostgresCommitter(ctx context.Context, url string) (Committer, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+probeTable+" (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), v bigint NOT NULL)"); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("bench: create probe table: %w", err)
	}
	return &pgCommitter{conn: conn}, nil
}

func (c *pgCommitter) Commit(ctx context.Context) error {
	_, err := c.conn.Exec(ctx, "INSERT INTO "+probeTable+" (v) VALUES ($1)", time.Now().UnixNano())
	return err
}

func (c *pgCommitter) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = c.conn.Exec(ctx, "DROP TABLE IF EXISTS "+probeTable)
	return c.conn.Close(ctx)
}

type sqliteCommitter struct{ db *sql.DB }

// OpenSQLiteCommitter opens (creating) a SQLite database at path with the
// settings of floe's SQLite metadata store (WAL, synchronous=FULL,
// immediate transactions). Each Commit is one BEGIN IMMEDIATE, one-row
// INSERT, COMMIT.
func OpenSQLiteCommitter(ctx context.Context, path string) (Committer, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("bench: open SQLite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+probeTable+" (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, v INTEGER NOT NULL)"); err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: create probe table: %w", err)
	}
	return &sqliteCommitter{db: db}, nil
}

func (c *sqliteCommitter) Commit(ctx context.Context) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+probeTable+" (at, v) VALUES (?, ?)", now, now); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (c *sqliteCommitter) Close() error { return c.db.Close() }
