package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderKafkaBrokerProperties(t *testing.T) {
	cfg := DefaultKafkaBrokerConfig()
	p := RenderKafkaBrokerProperties(cfg, "127.0.0.1:1001", "127.0.0.1:1002", "/tmp/x/log")
	for _, want := range []string{
		"process.roles=broker,controller\n",
		"controller.quorum.voters=1@127.0.0.1:1002\n",
		"listeners=PLAINTEXT://127.0.0.1:1001,CONTROLLER://127.0.0.1:1002\n",
		"advertised.listeners=PLAINTEXT://127.0.0.1:1001\n",
		"log.dirs=/tmp/x/log\n",
		"offsets.topic.replication.factor=1\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("properties lack %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "log.flush.interval.messages") {
		t.Errorf("default durability sets a flush interval:\n%s", p)
	}
	cfg.FlushEveryMessage = true
	if p := RenderKafkaBrokerProperties(cfg, "a:1", "a:2", "/l"); !strings.Contains(p, "\nlog.flush.interval.messages=1\n") {
		t.Errorf("FlushEveryMessage does not set log.flush.interval.messages=1:\n%s", p)
	}
}

func TestKafkaClusterID(t *testing.T) {
	// One id in 64 would start with '-' by chance; the storage tool reads
	// that as a flag (as Kafka's own Uuid.randomUuid, the ids avoid it).
	for range 1000 {
		id, err := newKafkaClusterID()
		if err != nil {
			t.Fatal(err)
		}
		// Kafka's Uuid.toString: 16 bytes in 22 URL-safe base64 characters.
		if len(id) != 22 || strings.ContainsAny(id, "+/=") || strings.HasPrefix(id, "-") {
			t.Fatalf("cluster id %q is not a Kafka Uuid the storage tool takes", id)
		}
	}
}

func TestResolveKafkaClasspath(t *testing.T) {
	dir := t.TempDir()
	jar := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broker, clients := jar("kafka_2.13-4.1.1.jar"), jar("kafka-clients-4.1.1.jar")
	write := func(content string) string {
		p := filepath.Join(dir, "kafka.cp")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()

	got, err := ResolveKafkaClasspath(ctx, write(clients+":"+broker+"\n"), "")
	if err != nil || len(got) != 2 || got[1] != broker {
		t.Fatalf("good classpath: %v, %v", got, err)
	}
	for name, cp := range map[string]string{
		"missing file":  filepath.Join(dir, "absent.cp"),
		"missing jar":   write(clients + ":" + filepath.Join(dir, "gone.jar") + ":" + broker),
		"no broker jar": write(clients),
		"empty listing": write("\n"),
	} {
		if _, err := ResolveKafkaClasspath(ctx, cp, ""); !errors.Is(err, ErrKafkaClasspath) {
			t.Errorf("%s: got %v, want ErrKafkaClasspath", name, err)
		}
	}
}

func TestKafkaConfigsValidate(t *testing.T) {
	if _, err := StartKafkaBroker(context.Background(), DefaultKafkaBrokerConfig()); !errors.Is(err, ErrKafkaClasspath) {
		t.Errorf("broker without classpath: %v", err)
	}
	for name, c := range map[string]KafkaConfig{
		"name":     {Brokers: []string{"a:1"}, RecordSize: 64, MaxBuffered: 1},
		"brokers":  {Name: "k", RecordSize: 64, MaxBuffered: 1},
		"size":     {Name: "k", Brokers: []string{"a:1"}, RecordSize: 8, MaxBuffered: 1},
		"buffered": {Name: "k", Brokers: []string{"a:1"}, RecordSize: 64},
	} {
		if _, err := NewKafkaSystem(c); err == nil {
			t.Errorf("KafkaConfig without %s accepted", name)
		}
	}
}
