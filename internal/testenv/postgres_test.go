package testenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgresFreshDatabases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := Postgres(t), Postgres(t)
	if a == b {
		t.Fatalf("two calls returned the same database %s", a)
	}
	for _, dsn := range []string{a, b} {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect %s: %v", dsn, err)
		}
		var version string
		var tables int
		if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(version, "15") && os.Getenv(PostgresURLEnv) == "" {
			t.Errorf("server version %s, want 15.x", version)
		}
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("fresh database %s has %d tables", dsn, tables)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
			t.Errorf("create table in %s: %v", dsn, err)
		}
		conn.Close(ctx)
	}
}

func TestPostgresAdminURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, PostgresAdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		t.Fatal(err)
	}
	if !super {
		t.Error("admin URL does not connect as a superuser")
	}
}
