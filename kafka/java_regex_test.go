//go:build kafkajava

package kafka_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJavaRegexSubscription runs testdata/java/FloeKafkaRegex.java: a Java
// consumer with group.protocol=consumer and a SubscriptionPattern reads
// exactly the matching topics, one created while it consumes included.
// Built only with -tags kafkajava (make test-kafka).
func TestJavaRegexSubscription(t *testing.T) {
	java, cp := javaClient(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-cp", cp, "testdata/java/FloeKafkaRegex.java", b.addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK 75") {
		t.Fatalf("java regex subscription: %v\n%s", err, out)
	}
}
