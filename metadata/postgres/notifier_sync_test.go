package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/internal/testenv"
)

// The notifier's statement delivers its payloads and commits without
// waiting for a WAL flush: synchronous_commit is off in its transaction,
// and only there (the pooled connection keeps the server's setting).
func TestNotifySQLAsyncCommit(t *testing.T) {
	ctx := context.Background()
	url := testenv.Postgres(t)
	listen, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Close(ctx)
	if _, err := listen.Exec(ctx, "LISTEN notify_sql_test"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The test server runs without synchronous commits: ask for them, as
	// a production server has them.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, notifySQL, []string{"notify_sql_test", "notify_sql_test"}, []string{"1:0:5", "2:3:4"}); err != nil {
		t.Fatal(err)
	}
	var inTx string
	if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inTx); err != nil || inTx != "off" {
		t.Fatalf("synchronous_commit in the notify's transaction: %q, %v; want off", inTx, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after); err != nil || after != "on" {
		t.Fatalf("synchronous_commit after the notify: %q, %v; want on", after, err)
	}
	for _, want := range []string{"1:0:5", "2:3:4"} {
		n, err := listen.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload != want {
			t.Fatalf("payload %q, want %q", n.Payload, want)
		}
	}
}
