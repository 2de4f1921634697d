package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/internal/services"
)

// childEnv marks the copy of the test binary TestEnvOverrides runs.
const childEnv = "FLOE_TESTENV_CHILD"

// TestEnvOverrides runs this test binary again pointed at this process's
// servers through the environment overrides: the child must use them and
// leave them as it found them; with an unreachable server it must fail.
func TestEnvOverrides(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		envChild(t)
		return
	}
	admin := PostgresAdminURL(t)
	endpoint, access, secret := S3Endpoint(t)
	env := []string{childEnv + "=1", PostgresURLEnv + "=" + admin,
		EnvS3Endpoint + "=" + endpoint, EnvS3AccessKey + "=" + access, EnvS3SecretKey + "=" + secret}
	out, err := runChild(env)
	if err != nil {
		t.Fatalf("child on this process's servers: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`CHILD db=(\S+) bucket=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("child did not name its database and bucket:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", m[1]).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the child's database %s on an external server was not dropped", m[1])
	}
	client := (&services.S3Server{Endpoint: endpoint, Region: "us-east-1", AccessKey: access, SecretKey: secret}).Client()
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(m[2])}); err == nil {
		t.Errorf("the child's bucket %s on an external server was not removed", m[2])
	}

	for _, bad := range [][]string{
		{PostgresURLEnv + "=postgres://postgres@127.0.0.1:1/postgres?sslmode=disable"},
		{PostgresURLEnv + "=" + admin, EnvS3Endpoint + "=" + endpoint}, // no S3 keys
	} {
		out, err := runChild(append(bad, childEnv+"=1"))
		if err == nil || !strings.Contains(out, "--- FAIL") || strings.Contains(out, "--- SKIP") {
			t.Errorf("child with %v: err %v, want a failure, not a skip:\n%s", bad, err, out)
		}
	}
}

// envChild is TestEnvOverrides in the child: it uses a database and a
// bucket on the servers the environment names and prints their names.
func envChild(t *testing.T) {
	var conn *pgx.Conn
	t.Cleanup(func() { // runs after Postgres's cleanup: the database is dropped in use
		if conn != nil {
			conn.Close(context.Background())
		}
	})
	dsn := Postgres(t)
	cfg := S3(t)
	if got, want := PostgresAdminURL(t), os.Getenv(PostgresURLEnv); got != want {
		t.Errorf("PostgresAdminURL = %s, want %s", got, want)
	}
	if got, want := cfg.Endpoint, os.Getenv(EnvS3Endpoint); got != want {
		t.Errorf("S3 endpoint = %s, want %s", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	client := (&services.S3Server{Endpoint: cfg.Endpoint, Region: cfg.Region, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}).Client()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String("k"),
		Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CHILD db=%s bucket=%s\n", strings.TrimPrefix(u.Path, "/"), cfg.Bucket)
}

// runChild runs TestEnvOverrides in a copy of this test binary with env
// added to the environment.
func runChild(env []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEnvOverrides$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
