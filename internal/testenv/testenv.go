// Package testenv starts the real services floe's integration tests run
// against — a throwaway PostgreSQL 15 cluster (postgres.go) and a versitygw
// S3 server (s3.go) — once per test process, and stops them at exit. All
// of the process's temporary data lives in one folder that is removed when
// the process ends, also when it panics or times out (tmpdir.go).
//
// A test that cannot get its service fails; it never skips.
//
// Use it from a package's TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/internal/services"
)

var (
	cleanupMu sync.Mutex // protects cleanups
	cleanups  []func()
)

// registerCleanup adds fn to the functions Main runs after the tests.
func registerCleanup(fn func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, fn)
}

// MainOption changes Main.
type MainOption func(*mainOptions)

type mainOptions struct {
	leaks    bool
	leakOpts []goleak.Option
}

// VerifyNoLeaks makes Main fail when goroutines are left running after the
// tests passed and the services stopped (go.uber.org/goleak).
func VerifyNoLeaks(opts ...goleak.Option) MainOption {
	return func(o *mainOptions) { o.leaks, o.leakOpts = true, opts }
}

// Main runs the tests, then stops every service started for them and
// removes the process's temporary folder (TempRoot), whether the tests
// passed or not.
func Main(m *testing.M, opts ...MainOption) {
	var o mainOptions
	for _, opt := range opts {
		opt(&o)
	}
	if tmpErr != nil {
		fmt.Fprintln(os.Stderr, tmpErr)
		os.Exit(1)
	}
	code := m.Run()
	cleanupMu.Lock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanupMu.Unlock()
	removeTempRoot()
	if code == 0 && o.leaks {
		if err := goleak.Find(o.leakOpts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// RepoRoot returns the module root (the folder holding go.mod), or "."
// when there is none above the working directory.
func RepoRoot() string {
	if root := services.RepoRoot(); root != "" {
		return root
	}
	return "."
}
