package main_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/internal/testenv"
)

// agentArgs returns `floe agent` arguments for the test PostgreSQL
// database dsn and a fresh bucket.
func agentArgs(t *testing.T, dsn string) []string {
	s3 := testenv.S3(t)
	return []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style"}
}

// readyz returns the status code and body of /readyz.
func readyz(t *testing.T, p *proc) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.metrics + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// grpcHealth returns the gRPC health status of the whole server, or
// UNKNOWN when the check fails.
func grpcHealth(p *proc) healthpb.HealthCheckResponse_ServingStatus {
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return r.GetStatus()
}

// waitReady waits until /readyz answers want (200 or 503) and, when the
// gRPC server runs (grpcToo), its health status agrees.
func waitReady(t *testing.T, p *proc, want int, grpcToo bool) string {
	t.Helper()
	wantHealth := healthpb.HealthCheckResponse_SERVING
	if want != 200 {
		wantHealth = healthpb.HealthCheckResponse_NOT_SERVING
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := readyz(t, p)
		if code == want && (!grpcToo || grpcHealth(p) == wantHealth) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz answers %d %q (gRPC health %v), want %d", code, body, grpcHealth(p), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAgentWaitsForPostgresAndReportsReadiness: an agent started while
// PostgreSQL is down waits (live, not ready, one WARN line per attempt with
// the cause) and serves once it is up; -fail-fast exits instead; readiness
// and gRPC health follow PostgreSQL going away and coming back.
func TestAgentWaitsForPostgresAndReportsReadiness(t *testing.T) {
	dsn := testenv.Postgres(t)
	args := agentArgs(t, dsn)

	// What waiting cannot fix ends the start at once, without -fail-fast:
	// here a database that does not exist.
	noDB := append([]string{}, args...)
	noDB[2] = strings.Replace(dsn, "/floe_test_", "/no_such_db_", 1)
	cmd := exec.Command(floeBin, append(noDB, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0")...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 ||
		!strings.Contains(errb.String(), "no_such_db_") {
		t.Fatalf("agent with a missing database: err %v, stderr %q", err, errb.String())
	}

	restart := testenv.StopPostgres(t)

	// -fail-fast: today's behaviour, one line and a non-zero exit.
	cmd = exec.Command(floeBin, append(append([]string{}, args...), "-fail-fast", "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0")...)
	errb.Reset()
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 ||
		!strings.Contains(errb.String(), "metadata store unavailable") {
		t.Fatalf("-fail-fast agent with PostgreSQL down: err %v, stderr %q", err, errb.String())
	}

	// Without: alive, not ready, retrying and saying why.
	// Until its first attempt fails the agent says only "starting"; then
	// why it waits.
	a := startFloeWait(t, "/healthz", args...)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		body := waitReady(t, a, 503, true)
		if strings.Contains(body, "waiting for the metadata store") {
			break
		}
		if !strings.Contains(body, "starting") || time.Now().After(deadline) {
			t.Fatalf("readyz while PostgreSQL is down: %q", body)
		}
	}
	c := dialT(t, a.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := c.CreateTopic(ctx, "too-early", 1, nil)
	cancel()
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("a call while the agent waits for its stores: %v, want Unavailable (starting)", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(a.logText(), "waiting for the metadata store") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two WARN lines about the metadata store:\n%s", a.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, l := range strings.Split(a.logText(), "\n") {
		if strings.Contains(l, "waiting for the metadata store") && (!strings.Contains(l, "level=WARN") || !strings.Contains(l, "cause=")) {
			t.Fatalf("start retry line is not a WARN with a cause: %q", l)
		}
	}
	restart()
	waitReady(t, a, 200, true)
	if _, err := c.CreateTopic(context.Background(), "after-wait", 1, nil); err != nil {
		t.Fatalf("create topic once PostgreSQL is back: %v", err)
	}

	// PostgreSQL goes away: not ready, NOT_SERVING; back: ready, SERVING.
	restart = testenv.StopPostgres(t)
	if body := waitReady(t, a, 503, true); !strings.Contains(body, "metadata store") {
		t.Fatalf("readyz with PostgreSQL stopped: %q", body)
	}
	if code, _ := httpStatus(t, a, "/healthz"); code != 200 {
		t.Fatalf("/healthz answers %d while PostgreSQL is down: liveness must not depend on it", code)
	}
	restart()
	waitReady(t, a, 200, true)
	if _, err := c.CreateTopic(context.Background(), "after-restart", 1, nil); err != nil {
		t.Fatalf("create topic after the PostgreSQL restart: %v", err)
	}
}

func httpStatus(t *testing.T, p *proc, path string) (int, error) {
	t.Helper()
	resp, err := http.Get("http://" + p.metrics + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
