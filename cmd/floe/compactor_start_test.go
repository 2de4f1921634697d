package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
)

// startCompactorProc starts `floe compactor` with args, its HTTP listener
// on a port it binds itself (read back from -addr-file), and waits until
// its /healthz answers 200 (not /readyz).
func startCompactorProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{logs: &strings.Builder{}, done: make(chan struct{})}
	args = append(append([]string{"compactor"}, args...), "-metrics-listen", "127.0.0.1:0")
	launch(t, p, "/healthz", p.withAddrFile(t, args))
	return p
}

// TestCompactorListensBeforeItsStores: floe compactor started while
// PostgreSQL is down listens at once — /healthz 200 (liveness), /readyz 503
// naming what the start waits for — instead of exiting or staying silent
// until its stores answer; SIGTERM while it waits is a clean stop (exit
// 0); once PostgreSQL is back it becomes ready and runs its passes.
func TestCompactorListensBeforeItsStores(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	args := []string{"-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint, "-s3-region", s3.Region,
		"-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-interval", "100ms"}
	restart := testenv.StopPostgres(t)

	early := startCompactorProc(t, args...)
	// "starting" at once, then, after its first attempt failed, what it
	// waits for.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := readyz(t, early)
		if code != 503 {
			t.Fatalf("readyz while PostgreSQL is down: %d %q", code, body)
		}
		if strings.Contains(body, "waiting for the metadata store") {
			break
		}
		if !strings.Contains(body, "not ready: starting") || time.Now().After(deadline) {
			t.Fatalf("readyz while PostgreSQL is down: %q", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := stopGracefully(t, early); code != 0 {
		t.Fatalf("compactor stopped while waiting for its stores: exit %d:\n%s", code, early.logText())
	}

	p := startCompactorProc(t, args...)
	if body := waitReady(t, p, 503, false); !strings.Contains(body, "not ready: starting") {
		t.Fatalf("readyz while PostgreSQL is down: %q", body)
	}
	restart()
	waitReady(t, p, 200, false)
	deadline = time.Now().Add(20 * time.Second)
	for metricValue0(p.metrics, "floe_compactor_passes_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no compactor pass once PostgreSQL is back:\n%s", p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := stopGracefully(t, p); code != 0 {
		t.Fatalf("compactor exit %d:\n%s", code, p.logText())
	}
}
