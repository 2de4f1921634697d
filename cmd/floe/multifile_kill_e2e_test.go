package main_test

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// TestMultiFileCommitsSurviveAgentKill: two agents on PostgreSQL and S3
// at a linger of 1 ms under enough concurrent producers that files wait
// for the commit in flight and are committed several at a time; agent 1
// is SIGKILLed while it has batches accepted and not yet acknowledged
// (uploading, uploaded and waiting, or in a multi-file commit). Every
// record either agent acknowledged is in the log afterwards, at its
// offset, once, and every partition's offsets are dense (verifyLog).
func TestMultiFileCommitsSurviveAgentKill(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	args := []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style",
		"-s3-prefix", "multifile", "-linger", "1ms", "-max-files-per-commit", "16"}
	a1 := startFloe(t, args...)
	a2 := startFloe(t, args...)
	c1, c2 := dialT(t, a1.addr), dialT(t, a2.addr)
	const parts = 4
	if _, err := c1.CreateTopic(t.Context(), "multi", parts, nil); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan []acked)
	go func() { done <- produceLoad(t, []*client.Client{c1, c2}, "multi", parts, 0, 32, 100000, stop) }()

	// Wait until agent 1 has committed several files in one transaction.
	deadline := time.Now().Add(60 * time.Second)
	for {
		files := metricValue(t, a1.metrics, "floe_batcher_commit_files_sum")
		commits := metricValue(t, a1.metrics, "floe_batcher_commit_files_count")
		if files > commits+10 {
			t.Logf("agent 1 before the kill: %v files in %v commits", files, commits)
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			<-done
			t.Fatalf("agent 1 committed %v files in %v commits in 60 s: files never waited together", files, commits)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Kill it while it holds batches not yet acknowledged.
	for metricValue(t, a1.metrics, "floe_batcher_buffered_bytes") == 0 {
		time.Sleep(time.Millisecond)
	}
	a1.kill()
	time.Sleep(500 * time.Millisecond) // the producers go on against agent 2
	close(stop)
	acks := <-done
	if len(acks) == 0 {
		t.Fatal("nothing acknowledged")
	}
	verifyLog(t, c2, "multi", parts, acks)
	t.Logf("%d records acknowledged, all in the log, offsets dense", len(acks))
}
