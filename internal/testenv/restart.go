package testenv

import (
	"context"
	"sync"
	"testing"
)

// StopPostgres stops the test PostgreSQL server with a fast shutdown
// (open sessions end with 57P01), keeping its data, and returns a function
// that starts it again on the same port and waits until it accepts
// connections. If the test ends with the server stopped, its cleanup starts
// it again.
//
// The server is shared by every test of the process: a test that stops it
// must not run in parallel with tests that use it. It fails t on a server
// named by FLOE_TEST_POSTGRES_URL, which is not ours to stop.
func StopPostgres(t testing.TB) (restart func()) {
	t.Helper()
	pg := sharedPostgres(t)
	if pgRemote {
		t.Fatalf("testenv: cannot stop the PostgreSQL server of %s", PostgresURLEnv)
	}
	if err := pg.Halt(); err != nil {
		t.Fatalf("testenv: stop postgres: %v", err)
	}
	var once sync.Once
	restart = func() {
		t.Helper()
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), pgStartTimeout)
			defer cancel()
			if err := pg.Resume(ctx); err != nil {
				t.Fatalf("testenv: restart postgres: %v", err)
			}
		})
	}
	t.Cleanup(restart)
	return restart
}
