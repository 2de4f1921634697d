package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// BackendEnv chooses the backends of the agent tests' harnesses (start,
// startGuarded): unset, SQLite and the in-memory store; "postgres+s3",
// the test PostgreSQL and a fresh bucket of the test S3 server (make test
// runs the package both ways).
const BackendEnv = "FLOE_TEST_AGENT_BACKEND"

// realBackends reports whether the harnesses run on PostgreSQL and S3.
func realBackends(t testing.TB) bool {
	switch v := os.Getenv(BackendEnv); v {
	case "":
		return false
	case "postgres+s3":
		return true
	default:
		t.Fatalf("%s=%q: want postgres+s3 or nothing", BackendEnv, v)
		return false
	}
}

// harnessMeta opens the harness's metadata store (closed by the caller).
func harnessMeta(ctx context.Context, t testing.TB) metadata.Store {
	t.Helper()
	var (
		s   metadata.Store
		err error
	)
	if realBackends(t) {
		s, err = postgres.Open(ctx, testenv.Postgres(t), postgres.DefaultOptions())
	} else {
		s, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// harnessObjects is the harness's object store.
func harnessObjects(t testing.TB) objectstore.Store {
	t.Helper()
	if !realBackends(t) {
		return objectstore.NewMemory()
	}
	sc := testenv.S3(t)
	cfg := s3store.DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.Region, cfg.AccessKey, cfg.SecretKey, cfg.PathStyle = sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, true
	s, err := s3store.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// objectCount is how many objects s holds.
func objectCount(t testing.TB, s objectstore.Store) int {
	t.Helper()
	n := 0
	if err := s.List(context.Background(), "", func(objectstore.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
