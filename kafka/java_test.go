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
// agent: admin, idempotent producers with every codec, a group of two
// then three (classic, and KIP-848's group.protocol=consumer), commits, an
// offset reset, and every record read back exactly. Built only with -tags kafkajava (make test-kafka).
func TestJavaClient(t *testing.T) {
	cp := os.Getenv("FLOE_KAFKA_JAVA_CP")
	if cp == "" {
		t.Fatal("FLOE_KAFKA_JAVA_CP is not set: run make test-kafka")
	}
	java := os.Getenv("FLOE_JAVA")
	if java == "" {
		java = "java"
	}
	for _, protocol := range []string{"classic", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			b := startBroker(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, java, "-cp", cp, "testdata/java/FloeKafkaCheck.java", b.addr, protocol)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OK 420") {
				t.Fatalf("java client, group.protocol=%s: %v\n%s", protocol, err, out)
			}
		})
	}
}
