package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/internal/services"
)

// ErrKafkaClasspath is returned when the Apache Kafka broker's jars cannot
// be found.
var ErrKafkaClasspath = errors.New("bench: Apache Kafka classpath")

// KafkaBrokerConfig configures the Apache Kafka broker the harness runs as
// a peer: one combined broker and controller (KRaft) on loopback, its log
// in a temporary directory.
type KafkaBrokerConfig struct {
	// Java is the java executable (Java 17 or later).
	Java string
	// Classpath is the broker's jars (ResolveKafkaClasspath).
	Classpath []string
	// FlushEveryMessage sets log.flush.interval.messages=1: the broker
	// fsyncs every message before acknowledging it (floe acknowledges
	// once its object is stored). Without it, Kafka's default: the page
	// cache, flushed when the OS likes.
	FlushEveryMessage bool
	// HeapBytes is the JVM heap (-Xms and -Xmx).
	HeapBytes int64
	// Logger, optional.
	Logger *slog.Logger
}

// DefaultKafkaBrokerConfig returns java from the PATH, a 1 GiB heap and
// Kafka's default durability.
func DefaultKafkaBrokerConfig() KafkaBrokerConfig {
	return KafkaBrokerConfig{Java: "java", HeapBytes: 1 << 30}
}

func (c KafkaBrokerConfig) validate() error {
	switch {
	case c.Java == "":
		return errors.New("bench: KafkaBrokerConfig.Java is empty")
	case len(c.Classpath) == 0:
		return fmt.Errorf("%w: KafkaBrokerConfig.Classpath is empty", ErrKafkaClasspath)
	case c.HeapBytes < 64<<20:
		return fmt.Errorf("bench: KafkaBrokerConfig.HeapBytes %d must be at least 64 MiB", c.HeapBytes)
	}
	return nil
}

// KafkaClasspathFile is where the broker's classpath is cached, as `make
// test-kafka` leaves it (mvn dependency:build-classpath of
// kafka/testdata/java/pom.xml into ~/.cache/floe/m2).
func KafkaClasspathFile() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "floe", "m2", "floe-kafka-java.cp")
}

// ResolveKafkaClasspath returns the jars listed (colon separated) in
// cpFile. When the file is missing and pom is not empty, it runs mvn to
// write it first, with the Maven repository beside the file. It fails
// naming what is missing: the file, a jar, or the broker's own jar.
func ResolveKafkaClasspath(ctx context.Context, cpFile, pom string) ([]string, error) {
	if _, err := os.Stat(cpFile); errors.Is(err, os.ErrNotExist) && pom != "" {
		cmd := exec.CommandContext(ctx, "mvn", "-q", "-f", pom, "-Dmaven.repo.local="+filepath.Dir(cpFile),
			"dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%w: mvn dependency:build-classpath of %s: %w: %s", ErrKafkaClasspath, pom, err, lastLine(out))
		}
	}
	b, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w (run `make test-kafka`, or mvn dependency:build-classpath of kafka/testdata/java/pom.xml)", ErrKafkaClasspath, err)
	}
	var jars []string
	broker := false
	for _, j := range strings.Split(strings.TrimSpace(string(b)), ":") {
		if j == "" {
			continue
		}
		if _, err := os.Stat(j); err != nil {
			return nil, fmt.Errorf("%w: %s lists %s: %w", ErrKafkaClasspath, cpFile, j, err)
		}
		if strings.HasPrefix(filepath.Base(j), "kafka_2.13-") {
			broker = true
		}
		jars = append(jars, j)
	}
	if !broker {
		return nil, fmt.Errorf("%w: %s holds no kafka_2.13 jar (the broker)", ErrKafkaClasspath, cpFile)
	}
	return jars, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// RenderKafkaBrokerProperties returns the server.properties of a single
// combined broker and controller: node 1, its client listener on
// brokerAddr, its controller on controllerAddr, its log in logDir.
func RenderKafkaBrokerProperties(cfg KafkaBrokerConfig, brokerAddr, controllerAddr, logDir string) string {
	lines := []string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.voters=1@" + controllerAddr,
		"listeners=PLAINTEXT://" + brokerAddr + ",CONTROLLER://" + controllerAddr,
		"advertised.listeners=PLAINTEXT://" + brokerAddr,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + logDir,
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"auto.create.topics.enable=false",
	}
	if cfg.FlushEveryMessage {
		lines = append(lines, "log.flush.interval.messages=1")
	}
	return strings.Join(lines, "\n") + "\n"
}

// newKafkaClusterID returns a random cluster id as Kafka writes one: 16
// bytes, URL-safe base64 without padding, never starting with '-' (which
// the storage tool would read as a flag; Kafka's Uuid.randomUuid avoids it
// the same way).
func newKafkaClusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("bench: cluster id: %w", err)
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id, nil
		}
	}
}

// KafkaBroker is a running Apache Kafka broker the harness owns.
type KafkaBroker struct {
	// Addr is the client listener (host:port).
	Addr string
	proc *services.Process
	dir  string
}

// Pid is the broker's JVM's process id.
func (b *KafkaBroker) Pid() int { return b.proc.Pid() }

// LogTail returns the end of the broker's output.
func (b *KafkaBroker) LogTail() string { return b.proc.LogTail() }

// Stop kills the broker and removes its data.
func (b *KafkaBroker) Stop() {
	b.proc.Stop(syscall.SIGTERM, 20*time.Second)
	_ = os.RemoveAll(b.dir)
}

// kafkaFreeAddr picks the broker's ports; tests replace it.
var kafkaFreeAddr = services.FreeAddr

// kafkaPortAttempts is how many pairs of free ports StartKafkaBroker
// tries: Kafka cannot listen on port 0 (its controller quorum names the
// controller's port), and a free port may be taken before it binds it.
const kafkaPortAttempts = 3

// errKafkaPortTaken marks a broker whose port another process holds.
var errKafkaPortTaken = errors.New("bench: kafka broker port taken")

// StartKafkaBroker formats a KRaft log directory in a temporary directory
// (kafka.tools.StorageTool format), starts kafka.Kafka on free loopback
// ports and waits until it answers metadata requests with its own
// cluster id (another broker on the port is not taken for it).
func StartKafkaBroker(ctx context.Context, cfg KafkaBrokerConfig) (_ *KafkaBroker, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-bench-kafka-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	b := &KafkaBroker{dir: dir}
	defer func() {
		if err != nil {
			if b.proc != nil {
				err = fmt.Errorf("%w\n%s", err, b.proc.LogTail())
			}
			b.Stop()
		}
	}()
	id, err := newKafkaClusterID()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		err := b.run(ctx, cfg, id, filepath.Join(dir, fmt.Sprintf("run-%d", attempt)))
		if err == nil {
			break
		}
		if attempt == kafkaPortAttempts || !errors.Is(err, errKafkaPortTaken) {
			return nil, err
		}
		b.proc.Stop(syscall.SIGKILL, time.Second)
		b.proc = nil
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("kafka broker ready", "addr", b.Addr, "pid", b.Pid(), "flush_every_message", cfg.FlushEveryMessage)
	}
	return b, nil
}

// run formats a log directory under dir for cluster id and starts the
// broker on two free ports, until it answers as that cluster.
func (b *KafkaBroker) run(ctx context.Context, cfg KafkaBrokerConfig, id, dir string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: kafka dir: %w", err)
	}
	if b.Addr, err = kafkaFreeAddr(); err != nil {
		return err
	}
	ctrl, err := kafkaFreeAddr()
	if err != nil {
		return err
	}
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(RenderKafkaBrokerProperties(cfg, b.Addr, ctrl, filepath.Join(dir, "log"))), 0o644); err != nil {
		return fmt.Errorf("bench: kafka properties: %w", err)
	}
	cp := strings.Join(cfg.Classpath, ":")
	format := exec.CommandContext(ctx, cfg.Java, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", id, "-c", props)
	if out, err := format.CombinedOutput(); err != nil {
		return fmt.Errorf("bench: kafka storage format: %w: %s", err, lastLine(out))
	}
	heap := fmt.Sprintf("%dm", cfg.HeapBytes>>20)
	b.proc, err = services.Start(services.ProcessSpec{Path: cfg.Java, Dir: dir, LogPath: filepath.Join(dir, "kafka.log"),
		Args: []string{"-Xms" + heap, "-Xmx" + heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
			"-Djava.awt.headless=true", "-cp", cp, "kafka.Kafka", props}})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := waitKafkaReady(wctx, b.Addr, id, b.proc); err != nil {
		return err
	}
	return nil
}

// waitKafkaReady waits until the broker at addr lists itself in metadata
// as cluster id: the broker p, not another one holding the port.
func waitKafkaReady(ctx context.Context, addr, id string, p *services.Process) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return fmt.Errorf("bench: kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		m, err := adm.BrokerMetadata(ctx)
		if err == nil && m.Cluster != id {
			return fmt.Errorf("%w: %s answers as cluster %q, not %q", errKafkaPortTaken, addr, m.Cluster, id)
		}
		if err == nil && len(m.Brokers) > 0 && m.Controller >= 0 {
			return nil
		}
		select {
		case <-p.Exited():
			if log := p.LogTail(); strings.Contains(log, "already in use") {
				return fmt.Errorf("%w: %s", errKafkaPortTaken, addr)
			}
			return fmt.Errorf("bench: kafka broker exited at start: %v", p.Err())
		case <-ctx.Done():
			return fmt.Errorf("bench: kafka broker at %s not ready: %w (last: %v)", addr, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
