package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PausePostgres hangs the server for an open connection (its backend is
// stopped too, not only the postmaster): a statement gets no answer until
// its context ends; after the resume the same connection answers again.
func TestPausePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	resume := PausePostgres(t)
	qctx, qcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	var one int
	err = conn.QueryRow(qctx, "SELECT 1").Scan(&one)
	qcancel()
	if !errors.Is(err, context.DeadlineExceeded) && !pgconnTimeout(err) {
		t.Fatalf("a statement to the paused server: %v (%d), want no answer before its deadline", err, one)
	}
	resume()
	conn2, err := pgx.Connect(ctx, Postgres(t))
	if err != nil {
		t.Fatalf("connect after the resume: %v", err)
	}
	defer conn2.Close(context.Background())
	if err := conn2.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the resume: %d, %v", one, err)
	}
}

// pgconnTimeout reports whether err is pgx's own timeout error (a
// deadline that passed while the statement was sent or awaited).
func pgconnTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
