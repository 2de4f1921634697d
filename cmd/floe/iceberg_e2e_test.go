package main_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/internal/testenv"
)

// An agent and `floe compactor` on PostgreSQL and S3: the compactor
// writes each topic's Iceberg table in the same PostgreSQL and bucket
// (under the prefix), `floe topic describe` shows the table's watermark
// and that retention waits for the table of a topic whose batches are
// younger than its iceberg.lag, and the table holds every record.
func TestIcebergCompactorPostgresS3(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	storeArgs := []string{"-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "e2e"}
	a := startFloe(t, append([]string{"agent"}, storeArgs...)...)
	startCompactor(t, append([]string{"-interval", "100ms", "-grace", "300ms", "-orphan-age", "3s"}, storeArgs...)...)
	c := dialT(t, a.addr)
	ctx := context.Background()
	for name, cfg := range map[string]map[string]string{
		"fast": {"iceberg.lag": "0", "retention.bytes": "1"},
		"slow": {"iceberg.lag": "1h", "retention.bytes": "1"},
		"off":  {"iceberg.enabled": "false"},
	} {
		if _, err := c.CreateTopic(ctx, name, 2, cfg); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := c.Produce(ctx, name, int32(i%2), client.Value([]byte(fmt.Sprint(i)), []byte(strings.Repeat("x", 100)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	wait := func(topic string, want ...string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, _, _ := floeCLI(t, "topic", "describe", topic, "-addr", a.addr)
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(out, w)
			}
			if ok {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("describe %s: want %q in:\n%s", topic, want, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	fast := wait("fast", "the table trails the log by 0 offsets")
	slow := wait("slow", "the table trails the log by 10 offsets", "waits for iceberg (keeps offsets >= 0)")
	off := wait("off", "iceberg: off")
	t.Logf("fast:\n%sslow:\n%soff:\n%s", fast, slow, off)
	// Through gRPC: slow's log starts stay at its table's watermark (0)
	// although retention.bytes=1; fast's moved with its table.
	for _, topic := range []string{"slow", "fast"} {
		d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: topic})
		if err != nil {
			t.Fatal(err)
		}
		if !d.GetIceberg().GetEnabled() || !d.GetIceberg().GetKnown() {
			t.Errorf("%s: iceberg %v", topic, d.GetIceberg())
		}
		for _, p := range d.GetPartitions() {
			if p.GetLogStartOffset() > p.GetIcebergWatermark() || p.GetRetentionWaitsForIceberg() != (topic == "slow") ||
				(topic == "fast") != (p.GetIcebergWatermark() == p.GetHighWatermark()) {
				t.Errorf("%s partition %v", topic, p)
			}
		}
	}
	// The table holds every record of fast.
	cfg := iceberg.DefaultPostgresConfig(dsn, s3.Bucket)
	cfg.Warehouse = "s3://" + s3.Bucket + "/e2e/iceberg"
	cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKey, cfg.S3SecretKey = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey
	w, err := iceberg.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rows, err := w.Scan(ctx, "fast", 0)
	if err != nil || len(rows) != 10 {
		t.Fatalf("table fast: %d rows, %v; want 10", len(rows), err)
	}
	// Describe names the table's last snapshot, the one the table has.
	st, err := w.Describe(ctx, "fast")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.GetIceberg().GetSnapshotId(); got == 0 || got != st.SnapshotID || d.GetIceberg().GetSnapshotTimeMs() <= 0 {
		t.Errorf("describe: last snapshot %d at %d, table's %d", got, d.GetIceberg().GetSnapshotTimeMs(), st.SnapshotID)
	}
	for _, topic := range []string{"slow", "off"} {
		if wm, err := w.Watermark(ctx, topic); err != nil || len(wm) != 0 {
			t.Errorf("table %s: watermark %v, %v; want none", topic, wm, err)
		}
	}
}
