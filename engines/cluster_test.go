//go:build engines

package engines

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/services"
)

// The credentials of deploy/compose.yaml, which the shipped Trino and
// Spark files carry: the suite uses the same ones, so that only hosts and
// ports are substituted in those files.
const (
	pgUser, pgPassword, pgDatabase = "floe", "floe", "floe"
	s3Access, s3Secret, bucket     = "floe", "floesecret", "floe"
	namespace                      = "floe"
)

// cluster is PostgreSQL, MinIO, a floe agent and a floe compactor, each a
// process of its own.
type cluster struct {
	dir        string
	pgHostPort string // 127.0.0.1:PORT
	pgURL      string // floe's database, as user floe
	s3         *services.S3Server
	agent      string // gRPC address
	client     *client.Client
	compactor  *services.Process
	// compactorHTTP is the compactor's HTTP listener (metrics, the
	// Iceberg REST catalog under /iceberg).
	compactorHTTP string
}

func startCluster(t *testing.T, ctx context.Context) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir()}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pg, err := services.StartPostgres(ctx, services.DefaultPostgresConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	admin, err := pgx.Connect(ctx, pg.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgUser, pgPassword),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", pgDatabase, pgUser),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close(ctx)
	u, _ := url.Parse(pg.AdminURL)
	c.pgHostPort = u.Host
	c.pgURL = fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", pgUser, pgPassword, u.Host, pgDatabase)

	if c.s3, err = services.StartMinIO(ctx, s3Access, s3Secret, log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.s3.Stop)
	if err := c.s3.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}

	c.agent = c.startFloe(t, ctx, "agent", "/readyz", "-linger", "20ms", "-ready-interval", "200ms")
	if c.client, err = client.Dial(c.agent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.client.Close() })
	return c
}

// storeArgs are the flags naming PostgreSQL and MinIO.
func (c *cluster) storeArgs() []string {
	return []string{"-postgres-url", c.pgURL, "-s3-bucket", bucket, "-s3-endpoint", c.s3.Endpoint,
		"-s3-region", c.s3.Region, "-s3-access-key", s3Access, "-s3-secret-key", s3Secret, "-s3-path-style"}
}

// startCompactor starts `floe compactor`, fast: a pass every 200 ms, no
// keyed compaction within the test (so that a compacted topic's table
// holds every record produced, which the suite compares).
func (c *cluster) startCompactor(t *testing.T, ctx context.Context) {
	t.Helper()
	c.startFloe(t, ctx, "compactor", "/healthz", "-interval", "200ms", "-compact-min-age", "1h",
		"-iceberg-maintain-interval", "0")
}

// startFloe starts `floe CMD` on ports it binds itself (read back from
// its -addr-file) and waits until its metrics listener answers path; it
// returns its gRPC address (agents).
func (c *cluster) startFloe(t *testing.T, ctx context.Context, cmd, path string, extra ...string) string {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), cmd+".addrs") // a fresh file for each process (a second compactor)
	args := append([]string{cmd, "-metrics-listen", "127.0.0.1:0", "-addr-file", addrFile}, c.storeArgs()...)
	if cmd == "agent" {
		// Never the default Kafka :9092, which another run may hold.
		args = append(args, "-listen", "127.0.0.1:0", "-kafka-listen", "127.0.0.1:0")
	}
	args = append(args, extra...)
	logPath := filepath.Join(c.dir, cmd+".log")
	p, err := services.Start(services.ProcessSpec{Path: floeBin, Args: args, LogPath: logPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 20*time.Second)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("floe %s log:\n%s", cmd, tail(b, 6000))
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	bound, err := services.WaitFloe(wctx, p, addrFile, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmd == "compactor" {
		c.compactor, c.compactorHTTP = p, bound.Metrics
	}
	return bound.GRPC
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitTables waits until every partition's table watermark reached its
// high watermark, for each topic.
func (c *cluster) waitTables(t *testing.T, ctx context.Context, topics ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for _, topic := range topics {
		for {
			d, err := c.client.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: topic})
			if err != nil {
				t.Fatal(err)
			}
			done := true
			for _, p := range d.GetPartitions() {
				done = done && p.GetIcebergWatermark() >= p.GetHighWatermark()
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("topic %s: the table did not reach the high watermarks: %v", topic, d.GetPartitions())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// metadataLocations returns each table's current metadata file, from the
// catalog's iceberg_tables.
func (c *cluster) metadataLocations(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(ctx, c.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name, metadata_location FROM iceberg_tables
		WHERE catalog_name = 'floe' AND table_namespace = $1`, namespace)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var name, loc string
		if err := rows.Scan(&name, &loc); err != nil {
			t.Fatal(err)
		}
		out[name] = loc
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
