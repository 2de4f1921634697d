package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
)

// TestPostgres starts a cluster whose first port is taken (it must come up
// on another), uses it, attaches to it, and stops it.
func TestPostgres(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := takenFirst(t, &pgFreePort, taken, FreePort)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := DefaultPostgresConfig()
	cfg.Durable = false
	pg, err := StartPostgres(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := pg.dir
	if *calls != 2 || strings.Contains(pg.AdminURL, fmt.Sprintf(":%d/", taken)) {
		pg.Stop()
		t.Fatalf("after a taken port: %d ports tried, AdminURL %s (taken port %d)", *calls, pg.AdminURL, taken)
	}
	url, err := pg.CreateDatabase(ctx, "floe_services_test")
	if err != nil {
		pg.Stop()
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		pg.Stop()
		t.Fatal(err)
	}
	var db string
	err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	if err != nil || db != "floe_services_test" {
		conn.Close(ctx)
		pg.Stop()
		t.Fatalf("current_database() = %q, %v", db, err)
	}
	attachErr := checkAttached(ctx, pg.AdminURL, conn)
	conn.Close(ctx)
	pg.Stop()
	if attachErr != nil {
		t.Fatal(attachErr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s not removed: %v", dir, err)
	}
	if err := (PostgresConfig{MaxConnections: 1, StartTimeout: time.Second}).validate(); err == nil {
		t.Fatal("MaxConnections 1 accepted")
	}
}

// checkAttached attaches to the server at adminURL and checks that a
// database can be created and dropped while conn uses it, and that Stop
// leaves the server running.
func checkAttached(ctx context.Context, adminURL string, conn *pgx.Conn) error {
	base := strings.TrimSuffix(adminURL, "?sslmode=disable") // a URL without a query
	pg, err := AttachPostgres(ctx, base)
	if err != nil {
		return err
	}
	if pg.Pid() != 0 {
		return fmt.Errorf("attached Pid() = %d, want 0", pg.Pid())
	}
	pg.Stop()
	url, err := pg.CreateDatabase(ctx, "floe_attached")
	if err != nil {
		return err
	}
	if want := strings.TrimSuffix(base, "/postgres") + "/floe_attached"; url != want {
		return fmt.Errorf("CreateDatabase URL %s, want %s", url, want)
	}
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer other.Close(ctx)
	if err := pg.DropDatabase(ctx, "floe_attached"); err != nil {
		return err
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = 'floe_attached'").Scan(&n); err != nil || n != 0 {
		return fmt.Errorf("floe_attached after DropDatabase: %d databases, %v", n, err)
	}
	if err := pg.DropDatabase(ctx, "floe_attached"); err != nil {
		return fmt.Errorf("dropping a missing database: %w", err)
	}
	if _, err := AttachPostgres(ctx, "host=127.0.0.1 user=postgres"); err == nil {
		return errors.New("a keyword/value DSN attached")
	}
	if _, err := AttachPostgres(ctx, "postgres://postgres@127.0.0.1:1/postgres"); err == nil {
		return errors.New("attached to a closed port")
	}
	return nil
}

func TestVersitygw(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv, err := StartVersitygw(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if err := srv.CreateBucket(ctx, "floe-services-test"); err != nil {
		t.Fatal(err)
	}
	c := srv.Client()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("floe-services-test"), Key: aws.String("k"), Body: bytes.NewReader([]byte("v"))}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe-services-test"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	// The same server named by its fields: usable, and not stopped by Stop.
	named := &S3Server{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}
	if named.Pid() != 0 {
		t.Errorf("Pid() of a named server = %d, want 0", named.Pid())
	}
	named.Stop()
	if err := named.CreateBucket(ctx, "floe-services-named"); err != nil {
		t.Fatalf("create bucket through a named server after its Stop: %v", err)
	}
}

func TestProcessStopAndLogs(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(ProcessSpec{Path: "/bin/sh", Args: []string{"-c", "echo hello; exec sleep 60"}, LogPath: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.LogTail(), "hello") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.LogTail(), "hello") {
		t.Fatalf("log: %q", p.LogTail())
	}
	t0 := time.Now()
	p.Stop(syscall.SIGTERM, 5*time.Second)
	p.Stop(syscall.SIGTERM, 5*time.Second) // idempotent
	if time.Since(t0) > 4*time.Second {
		t.Fatal("SIGTERM did not end the process")
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	if _, err := Start(ProcessSpec{Path: "/nonexistent", LogPath: filepath.Join(dir, "log2")}); err == nil {
		t.Fatal("starting a missing binary succeeded")
	}
	if _, err := Start(ProcessSpec{Path: "/bin/true"}); err == nil {
		t.Fatal("a spec without LogPath accepted")
	}
}

func TestToolsDir(t *testing.T) {
	t.Setenv(ToolsDirEnv, "/somewhere")
	if got := ToolsDir(); got != "/somewhere" {
		t.Fatalf("ToolsDir() = %q", got)
	}
	t.Setenv(ToolsDirEnv, "")
	if got := ToolsDir(); !strings.HasSuffix(got, ".tools") {
		t.Fatalf("ToolsDir() inside the repo = %q, want <repo>/.tools", got)
	}
}
