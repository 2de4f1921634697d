package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/services"
)

// PostgresURLEnv names the environment variable that points the tests at an
// existing PostgreSQL server (a superuser URL) instead of a throwaway cluster.
const PostgresURLEnv = "FLOE_TEST_POSTGRES_URL"

const pgStartTimeout = 20 * time.Second

var (
	pgOnce   sync.Once
	pgServer *services.Postgres // the test server, set by pgOnce
	pgErr    error              // why the server could not be had, set by pgOnce
	pgDBSeq  atomic.Int64
	pgRemote bool // the server is FLOE_TEST_POSTGRES_URL's, not ours
)

// Postgres returns the URL of a fresh, empty database on the test
// PostgreSQL server: a throwaway PostgreSQL 15 cluster started once per test
// process (stopped by Main), or the server named by FLOE_TEST_POSTGRES_URL.
// Any failure fails the test.
func Postgres(t testing.TB) string {
	t.Helper()
	pg := sharedPostgres(t)
	name := fmt.Sprintf("floe_test_%d_%d", os.Getpid(), pgDBSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := pg.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if pgRemote {
		// Someone else's server: leave it as we found it.
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pg.DropDatabase(ctx, name); err != nil {
				t.Errorf("testenv: %v", err)
			}
		})
	}
	return dsn
}

// PostgresAdminURL returns a superuser URL of the test PostgreSQL server
// (its "postgres" database), starting the server on first use.
func PostgresAdminURL(t testing.TB) string {
	t.Helper()
	return sharedPostgres(t).AdminURL
}

// sharedPostgres returns the test process's server, starting a cluster
// (stopped by Main) or attaching to FLOE_TEST_POSTGRES_URL on first use.
func sharedPostgres(t testing.TB) *services.Postgres {
	t.Helper()
	pgOnce.Do(func() {
		if u := os.Getenv(PostgresURLEnv); u != "" {
			pgRemote = true
			ctx, cancel := context.WithTimeout(context.Background(), pgStartTimeout)
			defer cancel()
			if pgServer, pgErr = services.AttachPostgres(ctx, u); pgErr != nil {
				pgErr = fmt.Errorf("%s: %w", PostgresURLEnv, pgErr)
			}
			return
		}
		cfg := services.DefaultPostgresConfig()
		cfg.Durable = false
		cfg.StartTimeout = pgStartTimeout // bounds each attempt to reach it
		if pgServer, pgErr = services.StartPostgres(context.Background(), cfg); pgErr == nil {
			registerCleanup(pgServer.Stop)
		}
	})
	if pgErr != nil {
		t.Fatalf("testenv: postgres: %v", pgErr)
	}
	return pgServer
}
