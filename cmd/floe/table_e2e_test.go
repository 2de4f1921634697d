package main_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// waitCLI runs floe with args until its output holds every want.
func waitCLI(t *testing.T, want []string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, err := floeCLI(t, args...)
		ok := err == nil
		for _, w := range want {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe %s: want %q in:\n%s%s (%v)", strings.Join(args, " "), want, out, errOut, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// An agent and `floe compactor` (maintaining every 300 ms, rewriting a
// day's small files once there are more than 2) on PostgreSQL and S3:
// `floe table describe` and `floe table scan`, with the compactor's
// settings, print the table and its rows; `floe topic describe` shows its
// rows, files, bytes, lag and last maintenance.
func TestTableCommandsPostgresS3(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	storeArgs := []string{"-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "tbl"}
	a := startFloe(t, append([]string{"agent"}, storeArgs...)...)
	startCompactor(t, append([]string{"-interval", "100ms", "-grace", "300ms", "-orphan-age", "3s",
		"-iceberg-maintain-interval", "300ms", "-iceberg-rewrite-min-files", "2", "-iceberg-keep-snapshots", "2"}, storeArgs...)...)
	c := dialT(t, a.addr)
	ctx := context.Background()
	for name, cfg := range map[string]map[string]string{"orders": {"iceberg.lag": "0"}, "later": {"iceberg.lag": "1h"}} {
		if _, err := c.CreateTopic(ctx, name, 2, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 { // in rounds: one small file per append
		if _, err := c.Produce(ctx, "orders", int32(i%2), client.Value([]byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("value-", i)))); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Produce(ctx, "later", int32(i%2), client.Value(nil, []byte("x"))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(120 * time.Millisecond)
	}
	desc := waitCLI(t, []string{"table floe.orders: 12 rows in", "the table trails the log by 0 offsets", "last maintained at"},
		"topic", "describe", "orders", "-addr", a.addr)
	later := waitCLI(t, []string{"the table trails the log by 12 offsets, "}, "topic", "describe", "later", "-addr", a.addr)
	t.Logf("topic describe:\n%s%s", desc, later)

	out := waitCLI(t, []string{"table          floe.orders", "rows           12", "PARTITION  WATERMARK", "0          6", "1          6", "SNAPSHOT"},
		append([]string{"table", "describe", "orders"}, storeArgs...)...)
	if !strings.Contains(out, "location       s3://"+s3.Bucket+"/tbl/iceberg/floe.db/orders") {
		t.Errorf("table describe: location missing:\n%s", out)
	}
	t.Logf("table describe:\n%s", out)
	scan, errOut, err := floeCLI(t, append([]string{"table", "scan", "orders", "-limit", "3"}, storeArgs...)...)
	if err != nil {
		t.Fatalf("table scan: %v: %s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(scan), "\n")
	// The rows come in the table's file order: maintenance may have
	// rewritten the oldest ones into a newer file, so any three produced
	// rows will do, each with its own key and matching value.
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "PARTITION") || lines[4] != "(3 rows)" {
		t.Errorf("table scan -limit 3:\n%s", scan)
	}
	seen := map[string]bool{}
	for _, l := range lines[1:min(len(lines), 4)] {
		m := regexp.MustCompile(`"k(\d+)"\s+"value-(\d+)"`).FindStringSubmatch(l)
		if m == nil || m[1] != m[2] || seen[m[1]] {
			t.Errorf("table scan -limit 3: row %q is not a produced record (or is repeated):\n%s", l, scan)
			continue
		}
		seen[m[1]] = true
	}
	t.Logf("table scan:\n%s", scan)
	// One-line errors.
	_, errOut, err = floeCLI(t, append([]string{"table", "describe", "nope"}, storeArgs...)...)
	if err == nil || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, `topic "nope" has no table floe.nope yet`) {
		t.Errorf("describe of a table-less topic: %v: %q", err, errOut)
	}
}

// floe dev writes tables too: `floe table describe|scan -data DIR` reads
// them. A value produced before the topic had a value schema lands in
// the rejected table: DescribeTopic (rejected_rows), `floe topic
// describe` and `floe table describe` count it.
func TestTableCommandsDev(t *testing.T) {
	data := t.TempDir()
	dev := startFloe(t, "dev", "-data", data, "-interval", "100ms")
	c := dialT(t, dev.addr)
	ctx := context.Background()
	// The table starts with the schema (iceberg.enabled off until then):
	// else the compactor may append the first values before the schema
	// exists, and nothing is rejected.
	if _, err := c.CreateTopic(ctx, "events", 1, map[string]string{"iceberg.lag": "0", "iceberg.enabled": "false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(ctx, "events", 0, client.Value([]byte("k"), []byte{0xff, 0x00}), client.Value(nil, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "events",
		Set: map[string]string{"value.schema": `{"type":"object","properties":{"id":{"type":"integer"}}}`, "iceberg.enabled": "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(ctx, "events", 0, client.Value(nil, []byte(`{"id":3}`))); err != nil {
		t.Fatal(err)
	}
	// Neither value written before the schema (0xff00, null) is an object.
	out := waitCLI(t, []string{"table          floe.events", "rows           3", "rejected table  floe.events_rejected",
		"rejected rows   2", "rejected files  1, "}, "table", "describe", "events", "-data", data)
	t.Logf("%s", out)
	desc := waitCLI(t, []string{"iceberg: 2 rejected rows"}, "topic", "describe", "events", "-addr", dev.addr)
	t.Logf("%s", desc)
	d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "events"})
	if err != nil || d.GetIceberg().GetRejectedRows() != 2 || d.GetIceberg().GetRows() != 3 {
		t.Errorf("DescribeTopic: %v, iceberg %v; want 2 rejected rows of 3", err, d.GetIceberg())
	}
	scan := waitCLI(t, []string{`"k"`, "0xff00", "null", "(3 rows)"}, "table", "scan", "events", "-data", data)
	t.Logf("%s", scan)
}
