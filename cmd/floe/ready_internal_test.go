package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// pingMeta is a metadata store whose Ping fails while down is set (only
// Ping is implemented).
type pingMeta struct {
	metadata.Store
	down atomic.Bool
}

func (m *pingMeta) Ping(context.Context) error {
	if m.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

// hangStore is an object store whose Head hangs until its context ends
// while hang is set, as a stalled S3 server does.
type hangStore struct {
	objectstore.Store
	hang atomic.Bool
}

func (s *hangStore) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if s.hang.Load() {
		<-ctx.Done()
		return objectstore.ObjectInfo{}, ctx.Err()
	}
	return s.Store.Head(ctx, key)
}

// Readiness follows the stores: a refused ping or a hung object store make
// the agent not ready (503, NOT_SERVING) within a check, recovery makes it
// ready again.
func TestReadinessFollowsTheStores(t *testing.T) {
	meta := &pingMeta{}
	store := &hangStore{Store: objectstore.NewMemory()}
	r := newReadiness(slog.New(slog.NewTextHandler(io.Discard, nil)), "starting")
	hs := health.NewServer()
	r.attach(hs)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); watchReadiness(ctx, r, meta, store, 20*time.Millisecond) }()
	defer func() { cancel(); wg.Wait() }()

	expect := func(code int, grpc healthpb.HealthCheckResponse_ServingStatus, reason string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
			hr, err := hs.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "floe.v1.LogService"})
			if w.Code == code && err == nil && hr.GetStatus() == grpc && strings.Contains(w.Body.String(), reason) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("readyz %d %q, health %v %v; want %d %v with %q", w.Code, w.Body.String(), hr.GetStatus(), err, code, grpc, reason)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	expect(200, healthpb.HealthCheckResponse_SERVING, "ready")
	meta.down.Store(true)
	expect(503, healthpb.HealthCheckResponse_NOT_SERVING, "metadata store unavailable")
	meta.down.Store(false)
	expect(200, healthpb.HealthCheckResponse_SERVING, "ready")
	store.hang.Store(true)
	expect(503, healthpb.HealthCheckResponse_NOT_SERVING, "object store unavailable")
	store.hang.Store(false)
	expect(200, healthpb.HealthCheckResponse_SERVING, "ready")
	r.stop()
	expect(503, healthpb.HealthCheckResponse_NOT_SERVING, "stopping")
}

// causeMeta fails Ping with what pgx says of a refused connection.
type causeMeta struct{ metadata.Store }

const pgCause = "failed to connect to `user=floe_admin database=floe_prod`: 127.0.0.1:5432 (db.internal): dial error: connection refused"

func (causeMeta) Ping(context.Context) error { return errors.New(pgCause) }

// /readyz names the store that does not answer and a request id, never
// the cause (user, database, address): that goes to the log, with the
// same request id. So while the start waits for the store, too.
func TestReadyzCarriesNoCause(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), nil))
	r := newReadiness(log, "starting")
	st := &starter{log: log, ready: r, attempt: time.Second, backoff: time.Millisecond, maxBackof: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	check := func() {
		t.Helper()
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		body := w.Body.String()
		for _, leak := range []string{"floe_admin", "floe_prod", "127.0.0.1", "5432", "db.internal", "refused"} {
			if strings.Contains(body, leak) {
				t.Errorf("/readyz body %q carries %q", body, leak)
			}
		}
		id := w.Header().Get("X-Request-Id")
		mu.Lock()
		logged := logs.String()
		mu.Unlock()
		if w.Code != 503 || !strings.Contains(body, "metadata store") || len(id) < 8 || !strings.Contains(body, "request id "+id) {
			t.Errorf("/readyz: %d %q (id %q), want 503 naming the metadata store and a request id", w.Code, body, id)
		} else if !strings.Contains(logged, id) || !strings.Contains(logged, "floe_admin") {
			t.Errorf("the log does not carry the cause with request id %s:\n%s", id, logged)
		}
	}
	err := st.retry(ctx, "metadata store", func(context.Context) error {
		calls++
		if calls == 2 {
			check() // while the start waits
			cancel()
		}
		return causeMeta{}.Ping(ctx)
	})
	if !errors.Is(err, errStartCanceled) {
		t.Fatalf("retry: %v", err)
	}
	r.set(checkStores(context.Background(), causeMeta{}, objectstore.NewMemory(), time.Second))
	check() // once serving
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestStarterRetries(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st := &starter{log: log, ready: newReadiness(log, "starting"), attempt: time.Second,
		backoff: time.Millisecond, maxBackof: 4 * time.Millisecond}

	// Fails three times, then succeeds: one WARN line per failure, with
	// the cause and the wait, doubling up to the cap.
	n := 0
	err := st.retry(context.Background(), "metadata store", func(context.Context) error {
		if n++; n <= 4 {
			return errors.New("dial tcp: connection refused")
		}
		return nil
	})
	if err != nil || n != 5 {
		t.Fatalf("retry: %v after %d attempts", err, n)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var waits []string
	for _, l := range lines {
		if strings.Contains(l, "waiting for the metadata store") {
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, `cause="dial tcp: connection refused"`) {
				t.Fatalf("retry line %q", l)
			}
			waits = append(waits, l[strings.Index(l, "retry_in=")+len("retry_in="):][:3])
		}
	}
	if strings.Join(waits, ",") != "1ms,2ms,4ms,4ms" {
		t.Fatalf("waits %v, want 1ms,2ms,4ms,4ms (doubling, capped)", waits)
	}

	// Permanent errors and -fail-fast end at once; cancellation is a clean stop.
	perm := errors.New("bucket does not exist")
	calls := 0
	if err := st.retry(context.Background(), "object store", func(context.Context) error { calls++; return &permanentError{perm} }); err != perm || calls != 1 {
		t.Fatalf("permanent: %v after %d calls", err, calls)
	}
	ff := *st
	ff.failFast = true
	calls = 0
	if err := ff.retry(context.Background(), "object store", func(context.Context) error { calls++; return errors.New("down") }); err == nil || calls != 1 {
		t.Fatalf("fail-fast: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := st.retry(ctx, "object store", func(context.Context) error { return errors.New("down") }); !errors.Is(err, errStartCanceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestPgTransient(t *testing.T) {
	cases := map[string]struct {
		err  error
		want bool
	}{
		"refused":        {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		"deadline":       {fmt.Errorf("connect: %w", context.DeadlineExceeded), true},
		"shutting down":  {fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P01"}), true},
		"starting up":    {&pgconn.PgError{Code: "57P03"}, true},
		"too many conns": {&pgconn.PgError{Code: "53300"}, true},
		"no database":    {fmt.Errorf("x: %w", &pgconn.PgError{Code: "3D000"}), false},
		"bad password":   {&pgconn.PgError{Code: "28P01"}, false},
		"other":          {errors.New("metadata: migration 0002 was changed after it was applied"), false},
	}
	for name, c := range cases {
		if got := pgTransient(c.err); got != c.want {
			t.Errorf("%s: pgTransient = %v, want %v", name, got, c.want)
		}
	}
}
