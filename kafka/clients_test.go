//go:build kafkaclients

package kafka_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka clients other than Go's, run by make test-kafka (built only with
// -tags kafkaclients): librdkafka through kcat and confluent-kafka-python,
// and kafkajs. Each produces with keys and headers and reads back exactly
// what it sent; franz-go reads the same records back too.

// sentLines are the records the scripts send, as they print them.
func sentLines(n int, header func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("key-%d\tvalue %d\t%s", i, i, header(i))
	}
	slices.Sort(out)
	return out
}

// runTool runs a client and returns its output's lines, sorted (records
// of several partitions come in any order across them).
func runTool(t *testing.T, name string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\n%s\n%s", name, args, err, out, msg)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// kgoLines reads a topic's n records with franz-go, as the scripts print them.
func kgoLines(t *testing.T, b *broker, topic string, n int) []string {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []string
	for _, r := range consumeN(t, cl, n) {
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		out = append(out, fmt.Sprintf("%s\t%s\t%s", r.Key, r.Value, strings.Join(hs, ",")))
	}
	slices.Sort(out)
	return out
}

func sameLines(t *testing.T, who string, want, got []string) {
	t.Helper()
	if !slices.Equal(want, got) {
		t.Fatalf("%s read back:\n%s\nwant:\n%s", who, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// cacheTool is a client installed by make test-kafka under ~/.cache/floe,
// named by an environment variable.
func cacheTool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: run make test-kafka", env)
	}
	return p
}

// TestKcat: kcat (librdkafka) produces idempotently with keys and headers,
// lz4-compressed, and consumes everything back to the end of the log (-e:
// librdkafka must see each partition's end, TestFetchEmptyRecordsNotNull),
// then again in a group that commits.
func TestKcat(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, newClient(t, b), "kcat", 3)
	const n = 50
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "key-%d\tvalue %d\n", i, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := exec.CommandContext(ctx, "kcat", "-b", b.addr, "-P", "-t", "kcat", "-K", "\t", "-H", "src=kcat", "-H", "empty=",
		"-X", "enable.idempotence=true", "-z", "lz4")
	prod.Stdin = strings.NewReader(in.String())
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat produce: %v\n%s", err, out)
	}
	want := sentLines(n, func(int) string { return "src=kcat,empty=" })
	sameLines(t, "kcat", want, runTool(t, "kcat", "-b", b.addr, "-C", "-t", "kcat", "-o", "beginning", "-e", "-q", "-f", "%k\t%s\t%h\n"))
	sameLines(t, "franz-go", want, kgoLines(t, b, "kcat", n))
	// And in a group (balanced consumer, offsets committed at exit).
	sameLines(t, "kcat -G", want, runTool(t, "kcat", "-b", b.addr, "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
		"-e", "-q", "-f", "%k\t%s\t%h\n", "kcat"))
	offs, err := kadm.NewClient(newClient(t, b)).FetchOffsets(context.Background(), "kcat-group")
	if err != nil {
		t.Fatal(err)
	}
	sum := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Fatalf("kcat-group committed %d records, want %d", sum, n)
	}
}

// TestConfluentKafkaPython: confluent-kafka-python produces idempotently
// (zstd) and consumes in a group, committing.
func TestConfluentKafkaPython(t *testing.T) {
	py := cacheTool(t, "FLOE_KAFKA_PYTHON")
	b := startBroker(t, nil)
	createTopic(t, newClient(t, b), "py", 3)
	const n = 60
	got := runTool(t, py, filepath.Join("testdata", "python", "check.py"), b.addr, "py", "py-group", fmt.Sprint(n))
	want := sentLines(n, func(i int) string { return fmt.Sprintf("i=%d", i) })
	if len(got) == 0 || got[0] != fmt.Sprintf("COMMITTED %d", n) { // "COMMITTED" sorts first
		t.Fatalf("committed: %v", got)
	}
	sameLines(t, "confluent-kafka-python", want, got[1:])
	sameLines(t, "franz-go", want, kgoLines(t, b, "py", n))
}

// TestKafkaJS: kafkajs produces idempotently and consumes in a group.
func TestKafkaJS(t *testing.T) {
	dir := cacheTool(t, "FLOE_KAFKAJS_DIR")
	b := startBroker(t, nil)
	createTopic(t, newClient(t, b), "js", 3)
	const n = 60
	script, err := filepath.Abs(filepath.Join("testdata", "js", "check.js"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NODE_PATH", filepath.Join(dir, "node_modules"))
	want := sentLines(n, func(i int) string { return fmt.Sprintf("i=%d", i) })
	sameLines(t, "kafkajs", want, runTool(t, "node", script, b.addr, "js", "js-group", fmt.Sprint(n)))
	sameLines(t, "franz-go", want, kgoLines(t, b, "js", n))
}
