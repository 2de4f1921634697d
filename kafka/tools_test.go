//go:build kafkajava

package kafka_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKafkaTools runs Apache Kafka's own command-line tools (kafka-tools
// and the broker jar of the release in testdata/java/pom.xml, by their
// main classes, on the classpath make test-kafka resolves) against an
// agent: kafka-topics creates, describes, lists and deletes a topic;
// kafka-console-producer sends keyed records, idempotent and zstd;
// kafka-console-consumer reads them back in a group that commits;
// kafka-consumer-groups lists and describes the group (no lag) and resets
// its offsets to the earliest, after which the console consumer reads
// everything again; kafka-configs sets and describes a topic config and a
// refused key is reported naming it. Built only with -tags kafkajava.
func TestKafkaTools(t *testing.T) {
	cp := os.Getenv("FLOE_KAFKA_JAVA_CP")
	if cp == "" {
		t.Fatal("FLOE_KAFKA_JAVA_CP is not set: run make test-kafka")
	}
	java := os.Getenv("FLOE_JAVA")
	if java == "" {
		java = "java"
	}
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tool := func(stdin string, wantOK bool, main string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, java, append([]string{"-cp", cp, main, "--bootstrap-server", b.addr}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("%s %v: %v\n%s", main, args, err, out)
		}
		if os.Getenv("DEBUGTOOLS") != "" {
			t.Logf("%s %v:\n%s", main, args, out)
		}
		var lines []string // without the logging framework's warnings
		for _, l := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(l, "SLF4J") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	const (
		topics    = "org.apache.kafka.tools.TopicCommand"
		producer  = "org.apache.kafka.tools.ConsoleProducer"
		consumer  = "org.apache.kafka.tools.consumer.ConsoleConsumer"
		groups    = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
		configs   = "kafka.admin.ConfigCommand"
		topicName = "tools"
		group     = "tools-group"
	)
	if out := tool("", true, topics, "--create", "--topic", topicName, "--partitions", "3", "--replication-factor", "1"); !strings.Contains(out, "Created topic tools.") {
		t.Fatalf("kafka-topics --create: %s", out)
	}
	if out := tool("", true, topics, "--describe", "--topic", topicName); !strings.Contains(out, "PartitionCount: 3") || strings.Count(out, "Leader: ") != 3 {
		t.Fatalf("kafka-topics --describe: %s", out)
	}
	want := []string{"k1:v1", "k2:v2", "k3:v3", "k4:v4", "k5:v5", "k6:v6"}
	tool(strings.Join(want, "\n")+"\n", true, producer, "--topic", topicName, "--property", "parse.key=true",
		"--property", "key.separator=:", "--producer-property", "enable.idempotence=true", "--compression-codec", "zstd")
	consume := func() {
		t.Helper()
		out := tool("", true, consumer, "--topic", topicName, "--group", group, "--from-beginning", "--max-messages", "6", "--timeout-ms", "30000",
			"--property", "print.key=true", "--property", "key.separator=:")
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "k") {
				got = append(got, l)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || !strings.Contains(out, "Processed a total of 6 messages") {
			t.Fatalf("kafka-console-consumer read %q, want %q:\n%s", got, want, out)
		}
	}
	consume()
	if out := tool("", true, groups, "--list"); !strings.Contains(out, group) {
		t.Fatalf("kafka-consumer-groups --list: %s", out)
	}
	out := tool("", true, groups, "--describe", "--group", group)
	var lagLines int
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 6 && f[0] == group && f[1] == topicName {
			lagLines++
			if f[3] != f[4] || f[5] != "0" {
				t.Errorf("kafka-consumer-groups --describe: partition %s at %s of %s, lag %s", f[2], f[3], f[4], f[5])
			}
		}
	}
	if lagLines != 3 {
		t.Fatalf("kafka-consumer-groups --describe: %d partitions:\n%s", lagLines, out)
	}
	out = tool("", true, groups, "--reset-offsets", "--group", group, "--topic", topicName, "--to-earliest", "--execute")
	reset := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == group && f[1] == topicName && f[3] == "0" {
			reset++
		}
	}
	if reset != 3 {
		t.Fatalf("kafka-consumer-groups --reset-offsets: %s", out)
	}
	consume() // everything again, from the reset positions

	tool("", true, configs, "--entity-type", "topics", "--entity-name", topicName, "--alter", "--add-config", "retention.ms=3600000")
	if out := tool("", true, configs, "--entity-type", "topics", "--entity-name", topicName, "--describe"); !strings.Contains(out, "retention.ms=3600000") {
		t.Fatalf("kafka-configs --describe: %s", out)
	}
	if out := tool("", false, configs, "--entity-type", "topics", "--entity-name", topicName, "--alter", "--add-config", "bogus.key=1"); !strings.Contains(out, `unknown key "bogus.key"`) {
		t.Fatalf("kafka-configs with an unknown key: %s", out)
	}
	tool("", true, topics, "--delete", "--topic", topicName)
	if out := tool("", true, topics, "--list"); strings.Contains(out, topicName) {
		t.Fatalf("kafka-topics --list after --delete: %s", out)
	}
}
