package services

import (
	"bytes"
	"context"
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

func TestPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := DefaultPostgresConfig()
	cfg.Durable = false
	pg, err := StartPostgres(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := pg.dir
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
	conn.Close(ctx)
	pg.Stop()
	if err != nil || db != "floe_services_test" {
		t.Fatalf("current_database() = %q, %v", db, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s not removed: %v", dir, err)
	}
	if err := (PostgresConfig{MaxConnections: 1, StartTimeout: time.Second}).validate(); err == nil {
		t.Fatal("MaxConnections 1 accepted")
	}
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
