package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// floeCLI runs a floe client command and returns its stdout and stderr.
func floeCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(floeBin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// startCompactor runs `floe compactor` until the test ends and returns
// its HTTP address once /healthz answers.
func startCompactor(t *testing.T, args ...string) (metrics string) {
	t.Helper()
	return startCompactorProc(t, args...).metrics
}

// An agent and two compactor replicas on PostgreSQL and S3: retention set
// with `floe topic alter` and `floe topic delete-records` makes the
// compactors delete the dead files; describe shows the storage figures.
func TestCompactorPostgresS3(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	storeArgs := []string{"-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "e2e"}
	a := startFloe(t, append([]string{"agent"}, storeArgs...)...)
	compArgs := append([]string{"-interval", "100ms", "-grace", "300ms", "-orphan-age", "3s"}, storeArgs...)
	m1 := startCompactor(t, compArgs...)
	m2 := startCompactor(t, compArgs...)
	c := dialT(t, a.addr)
	ctx := context.Background()
	if _, err := c.CreateTopic(ctx, "ret", 2, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := c.Produce(ctx, "ret", int32(i%2), client.Value(nil, []byte(fmt.Sprintf("record-%03d-%s", i, strings.Repeat("x", 200))))); err != nil {
			t.Fatal(err)
		}
	}
	before, _, err := floeCLI(t, "topic", "describe", "ret", "-addr", a.addr)
	if err != nil || !strings.Contains(before, "storage: 40 files") {
		t.Fatalf("describe before retention: %v\n%s", err, before)
	}
	out, errOut, err := floeCLI(t, "topic", "alter", "ret", "-set", "retention.bytes=1000", "-addr", a.addr)
	if err != nil || !strings.Contains(out, "config retention.bytes=1000") {
		t.Fatalf("topic alter: %v %s %s", err, out, errOut)
	}
	out, errOut, err = floeCLI(t, "topic", "delete-records", "ret", "-partition", "1", "-offset", "-1", "-addr", a.addr)
	if err != nil || !strings.Contains(out, "log start 20, high watermark 20") {
		t.Fatalf("topic delete-records: %v %s %s", err, out, errOut)
	}
	var after string
	deadline := time.Now().Add(20 * time.Second)
	for {
		after, _, _ = floeCLI(t, "topic", "describe", "ret", "-addr", a.addr)
		if strings.Contains(after, "deletion queue (all topics): 0 files") && !strings.Contains(after, "storage: 40 files") &&
			metricValue(t, m1, "floe_compactor_files_deleted_total")+metricValue(t, m2, "floe_compactor_files_deleted_total") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead files not deleted in 20 s:\n%s", after)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("before retention:\n%safter:\n%s", before, after)
	deleted := metricValue(t, m1, "floe_compactor_files_deleted_total") + metricValue(t, m2, "floe_compactor_files_deleted_total")
	if deleted < 30 {
		t.Errorf("%v files deleted, want at least 30 (partition 1 emptied, partition 0 down to ~1000 bytes)", deleted)
	}
	// Each job ran in one replica only while both were up.
	for _, job := range []string{"retention", "deletion", "orphans"} {
		n1 := metricValue(t, m1, fmt.Sprintf(`floe_compactor_passes_total{task=%q,result="ok"}`, job))
		n2 := metricValue(t, m2, fmt.Sprintf(`floe_compactor_passes_total{task=%q,result="ok"}`, job))
		if n1 > 0 && n2 > 0 {
			t.Errorf("job %s ran in both replicas (%v and %v passes)", job, n1, n2)
		}
	}
}

// The retention commands keep the CLI's habits: -h exits 0, bad or extra
// arguments fail in one line.
func TestRetentionCommandsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"compactor", "-h"}, "-postgres-url"},
		{[]string{"topic", "alter", "-h"}, "-set"},
		{[]string{"topic", "delete-records", "-h"}, "-offset"},
	} {
		out, errOut, err := floeCLI(t, tc.args...)
		if err != nil || !strings.Contains(out+errOut, tc.flag) {
			t.Errorf("%v: %v, usage %q %q", tc.args, err, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"compactor", "extra"},
		{"compactor", "-no-such-flag"},
		{"topic", "alter", "t", "-bogus"},
		{"compactor", "-s3-bucket", "b"},
		{"topic", "alter", "t", "u", "-set", "retention.ms=1"},
		{"topic", "alter", "t"},
		{"topic", "delete-records", "t", "-offset", "3"},
		{"topic", "delete-records", "t", "-partition", "0"},
		{"topic", "delete-records"},
	} {
		_, errOut, err := floeCLI(t, args...)
		if err == nil || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "floe: ") {
			t.Errorf("%v: err %v, stderr %q; want a one-line error", args, err, errOut)
		}
	}
}
