package chaos

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/internal/testenv"
)

func proxiedPG(t *testing.T) (direct, proxied string, p *PGProxy) {
	t.Helper()
	direct = testenv.Postgres(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = StartPGProxy(u.Host, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr()
	return direct, u.String(), p
}

func count(t *testing.T, ctx context.Context, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPGProxyLosesCommitAnswers: with LoseCommitAnswers, a COMMIT (simple
// protocol) and a function naming commit called through a prepared
// statement (Parse once, then Bind only) are committed by the server but
// their clients hear an error; other statements pass.
func TestPGProxyLosesCommitAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	direct, proxied, p := proxiedPG(t)
	conn, err := pgx.Connect(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{"CREATE TABLE t (v int)",
		"CREATE FUNCTION commit_one(x int) RETURNS int LANGUAGE sql AS 'INSERT INTO t VALUES (x) RETURNING x'"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if err := conn.QueryRow(ctx, "SELECT commit_one($1)", 1).Scan(&v); err != nil || v != 1 {
		t.Fatalf("before the fault: %d %v", v, err)
	}
	p.Set(PGMode{LoseCommitAnswers: true})
	if err := conn.QueryRow(ctx, "SELECT commit_one($1)", 2).Scan(&v); err == nil {
		t.Fatal("the answer of a prepared commit_one came through")
	}
	if n := count(t, ctx, direct); n != 2 {
		t.Fatalf("%d rows, want 2: the withheld call must have committed", n)
	}
	conn2, err := pgx.Connect(ctx, proxied)
	if err != nil {
		t.Fatalf("a connection while answers are lost: %v", err)
	}
	defer conn2.Close(ctx)
	if err := conn2.QueryRow(ctx, "SELECT 41 + 1").Scan(&v); err != nil || v != 42 {
		t.Fatalf("a statement without commit: %d %v", v, err)
	}
	tx, err := conn2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("the answer of COMMIT came through")
	}
	if n := count(t, ctx, direct); n != 3 {
		t.Fatalf("%d rows, want 3: the COMMIT must have committed", n)
	}
	if got := p.Withheld.Load(); got != 2 {
		t.Fatalf("withheld %d answers, want 2", got)
	}
	p.Set(PGMode{})
	conn3, err := pgx.Connect(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer conn3.Close(ctx)
	if err := conn3.QueryRow(ctx, "SELECT commit_one($1)", 4).Scan(&v); err != nil || v != 4 {
		t.Fatalf("after the fault: %d %v", v, err)
	}
}

// TestPGProxyRefuses: Refuse drops the open connections and refuses new
// ones until it is lifted.
func TestPGProxyRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, proxied, p := proxiedPG(t)
	conn, err := pgx.Connect(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	p.Set(PGMode{Refuse: true})
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("an open connection survived the partition")
	}
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = pgx.Connect(cctx, proxied)
	ccancel()
	if err == nil {
		t.Fatal("a new connection got through the partition")
	}
	p.Set(PGMode{})
	conn2, err := pgx.Connect(ctx, proxied)
	if err != nil {
		t.Fatalf("after the partition: %v", err)
	}
	conn2.Close(ctx)
}

// TestS3Proxy: each mode does what the fault schedule relies on.
func TestS3Proxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testenv.S3(t)
	p, err := StartS3Proxy(cfg.Endpoint, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	server := func(endpoint string) *s3.Client {
		s := &services.S3Server{Endpoint: endpoint, Region: cfg.Region, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}
		return s.Client()
	}
	direct, proxied := server(cfg.Endpoint), server(p.URL())
	put := func(c *s3.Client, key string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(key),
			Body: strings.NewReader("data-" + key)})
		return err
	}
	get := func(c *s3.Client, key string) (string, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(key)})
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return string(b), err
	}
	if err := put(proxied, "a"); err != nil {
		t.Fatalf("forwarded put: %v", err)
	}
	p.Set(S3Mode{ErrorAfterWrite: true})
	var apiErr smithy.APIError
	if err := put(proxied, "b"); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InternalError" {
		t.Fatalf("put with ErrorAfterWrite: %v, want InternalError", err)
	}
	if got, err := get(direct, "b"); err != nil || got != "data-b" {
		t.Fatalf("the write answered with an error was not applied: %q %v", got, err)
	}
	if got, err := get(proxied, "a"); err != nil || got != "data-a" {
		t.Fatalf("a read with ErrorAfterWrite: %q %v", got, err)
	}
	p.Set(S3Mode{SlowDown: true})
	if _, err := get(proxied, "a"); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SlowDown" {
		t.Fatalf("get with SlowDown: %v", err)
	}
	p.Set(S3Mode{Outage: true})
	if _, err := get(proxied, "a"); err == nil {
		t.Fatal("a get went through the outage")
	}
	p.Set(S3Mode{Latency: 10 * time.Millisecond})
	if got, err := get(proxied, "a"); err != nil || got != "data-a" {
		t.Fatalf("get with latency: %q %v", got, err)
	}
	p.Set(S3Mode{Link: Link{Latency: 50 * time.Millisecond, Loss: 1}})
	start := time.Now()
	if err := put(proxied, "c"); err != nil {
		t.Fatalf("put over a lossy link: %v", err)
	}
	if got, err := get(direct, "c"); err != nil || got != "data-c" || time.Since(start) < 50*time.Millisecond+minRetransmitStall {
		t.Fatalf("over a lossy link: %q %v after %v, want the write applied after the latency and a stall", got, err, time.Since(start))
	}
	before := p.Served()
	p.Set(S3Mode{})
	if _, err := get(proxied, "a"); err != nil || p.Served() != before+1 {
		t.Fatalf("healed: %v, served %d after %d", err, p.Served(), before)
	}
}

// TestPGProxyLink: over a slow, lossy link every statement is answered,
// correctly, each burst each way after the latency and a stall.
func TestPGProxyLink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, proxied, p := proxiedPG(t)
	conn, err := pgx.Connect(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	p.Set(PGMode{Link: Link{Latency: 30 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 1}})
	for i := range 3 {
		start := time.Now()
		var v int
		if err := conn.QueryRow(ctx, "SELECT $1::int * 2", i).Scan(&v); err != nil || v != 2*i {
			t.Fatalf("query %d over the link: %d %v", i, v, err)
		}
		if took := time.Since(start); took < 2*(30*time.Millisecond+minRetransmitStall) {
			t.Fatalf("query %d answered after %v: the link's delay each way was skipped", i, took)
		}
	}
}

func TestLinkDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		if d := (Link{Latency: 10 * time.Millisecond}).delay(rng); d != 10*time.Millisecond {
			t.Fatalf("no jitter, no loss: %v", d)
		}
		d := Link{Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}.delay(rng)
		if d < 10*time.Millisecond || d >= 15*time.Millisecond {
			t.Fatalf("draw %d with jitter: %v", i, d)
		}
		d = Link{Loss: 1}.delay(rng)
		if d < minRetransmitStall || d >= maxRetransmitStall {
			t.Fatalf("draw %d, every burst lost: %v", i, d)
		}
	}
	if d := (Link{}).delay(rng); d != 0 {
		t.Fatalf("a perfect link: %v", d)
	}
}
