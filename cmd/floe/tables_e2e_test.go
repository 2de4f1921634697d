package main_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata/postgres"
)

// TestAgentReadsTableOfOtherNamespace: floe compactor writing the tables
// into a non-default namespace and prefix, and floe agent given the same
// settings, serve the offsets whose raw files aged out from the table.
func TestAgentReadsTableOfOtherNamespace(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	storeArgs := []string{"-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "e2e"}
	iceArgs := []string{"-iceberg-namespace", "analytics", "-iceberg-prefix", "lake"}
	a := startFloe(t, append(append([]string{"agent"}, storeArgs...), iceArgs...)...)
	startCompactor(t, append(append([]string{"-interval", "100ms", "-grace", "300ms", "-orphan-age", "3s"}, storeArgs...), iceArgs...)...)
	c := dialT(t, a.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, n = "aged", 20
	if _, err := c.CreateTopic(ctx, topic, 1, map[string]string{"retention.raw.ms": "0", "iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.Produce(ctx, topic, 0, client.Value(nil, fmt.Appendf(nil, "v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// The raw log start passes every record once the table holds them.
	meta, err := postgres.Open(ctx, dsn, postgres.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	for {
		d, err := meta.DescribeTopic(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if d.PartitionStates[0].LogStartOffset == n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the raw files never aged out: %+v", d.PartitionStates)
		}
		time.Sleep(200 * time.Millisecond)
	}
	resp, err := c.Fetch(ctx, topic, 0, 0, 1<<20, 0)
	if err != nil {
		t.Fatalf("fetch below the raw log start from the table in namespace analytics: %v", err)
	}
	if len(resp.GetRecords()) != n || string(resp.GetRecords()[0].GetValue()) != "v0" || resp.GetLogStartOffset() != 0 {
		t.Fatalf("fetch from the table: %d records, first %v, log start %d; want %d from v0, log start 0",
			len(resp.GetRecords()), resp.GetRecords()[:min(1, len(resp.GetRecords()))], resp.GetLogStartOffset(), n)
	}
}
