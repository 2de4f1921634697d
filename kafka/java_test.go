//go:build kafkajava

package kafka_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJavaClient runs Apache Kafka's Java client (testdata/java, with the
// classpath make test-kafka resolves into FLOE_KAFKA_JAVA_CP) against an
// agent: admin, idempotent producers with every codec, a classic group of
// two then three, commits, an offset reset, and every record read back
// exactly. Built only with -tags kafkajava (make test-kafka).
func TestJavaClient(t *testing.T) {
	cp := os.Getenv("FLOE_KAFKA_JAVA_CP")
	if cp == "" {
		t.Fatal("FLOE_KAFKA_JAVA_CP is not set: run make test-kafka")
	}
	java := os.Getenv("FLOE_JAVA")
	if java == "" {
		java = "java"
	}
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-cp", cp, "testdata/java/FloeKafkaCheck.java", b.addr)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK 420") {
		t.Fatalf("java client: %v\n%s", err, out)
	}
}
