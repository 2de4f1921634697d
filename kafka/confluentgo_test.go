//go:build kafkaclients

package kafka_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConfluentKafkaGo runs confluent-kafka-go (librdkafka through cgo;
// testdata/confluentgo, a module of its own so that cgo stays out of the
// broker's go.mod) against an agent: idempotent produce of keyed records
// with a header in every codec, a group of two that commits and a third
// member joining, every record read back exactly; then the committed
// positions reach the end and franz-go reads the same 100 records.
func TestConfluentKafkaGo(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "cgo", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "confluentgo")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("testdata", "confluentgo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build confluent-kafka-go check: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, b.addr, "cgo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK 100") {
		t.Fatalf("confluent-kafka-go: %v\n%s", err, out)
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "confluent-go")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 100 {
		t.Fatalf("committed %d, want 100", sum)
	}
	recs := consumeN(t, newClient(t, b, kgo.ConsumeTopics("cgo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 100)
	for _, r := range recs {
		if len(r.Headers) != 1 || r.Headers[0].Key != "codec" || !strings.HasPrefix(string(r.Key), string(r.Headers[0].Value)+"-") {
			t.Fatalf("franz-go reads %q with headers %v", r.Key, r.Headers)
		}
	}
}
