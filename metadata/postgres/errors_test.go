package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
)

// TestDefinite table-tests the classifier of write errors with errors
// produced by pgx itself where it can make them.
func TestDefinite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, refused := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	if refused == nil {
		t.Fatal("connect to port 1 succeeded")
	}
	conn, err := pgx.Connect(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	_, ctxFirst := conn.Exec(done, "SELECT 1") // the context ended before anything was sent
	_, serverErr := conn.Exec(ctx, "SELECT 1/0")
	conn.Close(ctx)
	_, closedConn := conn.Exec(ctx, "SELECT 1")

	for _, tc := range []struct {
		name     string
		err      error
		definite bool
	}{
		{"connection refused", refused, true},
		{"connection refused, wrapped", fmt.Errorf("acquire: %w", refused), true},
		{"context ended before sending", ctxFirst, true},
		{"closed connection", closedConn, true},
		{"server ERROR (rolled back)", serverErr, true},
		{"server FATAL", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}, false},
		{"connection lost mid-statement", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false},
		{"context ended while waiting for the answer", context.DeadlineExceeded, false},
		{"unknown", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if tc.err == nil && tc.name != "nil" {
			t.Fatalf("%s: no error was produced", tc.name)
		}
		if got := Definite(tc.err); got != tc.definite {
			t.Errorf("%s: Definite(%v) = %v, want %v", tc.name, tc.err, got, tc.definite)
		}
	}
}

// TestCommitNotAppliedWhenStopped stops the PostgreSQL server under an open
// store: a commit cannot reach it, and says so (NotApplied), not "unknown".
func TestCommitNotAppliedWhenStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := services.DefaultPostgresConfig()
	cfg.Durable, cfg.MaxConnections = false, 20
	pg, err := services.StartPostgres(ctx, cfg)
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			pg.Stop()
		}
	}()
	opts := DefaultOptions()
	opts.ConnectTimeout = 2 * time.Second
	s, err := Open(ctx, pg.AdminURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := metadata.FileCommit{Key: "k", Size: 10, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, ByteLength: 10, RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence}}}
	pg.Stop()
	stopped = true
	// The pool checks a connection idle for a second before handing it out;
	// one used within the second is sent the statement (an ambiguous
	// failure, rightly: the store cannot tell where it broke).
	time.Sleep(1100 * time.Millisecond)
	_, err = s.CommitFile(ctx, f)
	if !metadata.NotApplied(err) || errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("CommitFile with PostgreSQL stopped = %v, want a NotApplied error (not ErrClosed)", err)
	}
	t.Logf("CommitFile with PostgreSQL stopped: %v", err)
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping with PostgreSQL stopped succeeded")
	}
}

// TestCommitNotAppliedPoolExhausted: a commit that gets no connection from
// the pool before its deadline was never sent.
func TestCommitNotAppliedPoolExhausted(t *testing.T) {
	opts := DefaultOptions()
	opts.MaxConns = 1
	opts.NotifyInCommit = true // the notifier would want the one connection too
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.Postgres(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := metadata.FileCommit{Key: "k", Size: 10, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, ByteLength: 10, RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence}}}
	held, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = s.CommitFile(short, f)
	cancelShort()
	held.Release()
	if !metadata.NotApplied(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CommitFile without a free connection = %v, want NotApplied and DeadlineExceeded", err)
	}
	res, err := s.CommitFile(ctx, f)
	if err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("CommitFile once the connection is free = %+v, %v; want offset 0 (the first try wrote nothing)", res, err)
	}
}

// TestCommitAfterClose: a closed store refuses commits definitely.
func TestCommitErrorsAfterClose(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	s.Close()
	_, err := s.CommitFile(context.Background(), metadata.FileCommit{Key: "k", Size: 10, Batches: []metadata.BatchCommit{
		{TopicID: 1, ByteLength: 10, RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence}}})
	if !errors.Is(err, metadata.ErrClosed) || !metadata.NotApplied(err) {
		t.Fatalf("CommitFile after Close = %v, want ErrClosed", err)
	}
}
