package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/floe-broker/floe/bench"
	"github.com/floe-broker/floe/internal/services"
)

// The systems -systems compares side by side.
const (
	sysFloeKafka  = "floe-kafka"
	sysFloeGRPC   = "floe-grpc"
	sysKafka      = "kafka"
	sysKafkaFlush = "kafka-flush"
)

var systemLabels = map[string]string{
	sysFloeKafka:  "floe over Kafka (franz-go)",
	sysFloeGRPC:   "floe over gRPC (batch data plane)",
	sysKafka:      "Apache Kafka 4.1 (default durability)",
	sysKafkaFlush: "Apache Kafka 4.1 (flush.messages=1)",
}

// parseSystems reads -systems: known names, comma separated, no repeats.
func parseSystems(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, name := range splitList(s) {
		if _, ok := systemLabels[name]; !ok {
			return nil, fmt.Errorf("flag -systems: %q is not one of floe-kafka, floe-grpc, kafka, kafka-flush", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("flag -systems: %q is named twice", name)
		}
		seen[name] = true
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("flag -systems: no system named")
	}
	return out, nil
}

// kafkaPeer starts an Apache Kafka broker (flush: flush.messages=1) from
// the cached jars and returns the franz-go system driving it and its stop.
func kafkaPeer(ctx context.Context, name string, flush bool, rc bench.RunConfig, maxBuffered, maxInFlight int, log *slog.Logger, progress *bench.Progress) (*bench.KafkaSystem, func(), error) {
	pom := ""
	if root := services.RepoRoot(); root != "" {
		if p := filepath.Join(root, "kafka", "testdata", "java", "pom.xml"); fileExists(p) {
			pom = p
		}
	}
	cp, err := bench.ResolveKafkaClasspath(ctx, bench.KafkaClasspathFile(), pom)
	if err != nil {
		return nil, nil, err
	}
	cfg := bench.DefaultKafkaBrokerConfig()
	cfg.Classpath, cfg.FlushEveryMessage, cfg.Logger = cp, flush, log
	progress.Note("starting Apache Kafka (KRaft, one broker, flush.messages=1: %v)", flush)
	b, err := bench.StartKafkaBroker(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	sys, err := bench.NewKafkaSystem(bench.KafkaConfig{Name: name, Brokers: []string{b.Addr}, Pid: b.Pid(),
		RecordSize: rc.RecordSize, MaxBuffered: maxBuffered, MaxInFlight: maxInFlight})
	if err != nil {
		b.Stop()
		return nil, nil, err
	}
	return sys, func() { sys.Close(); b.Stop() }, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// runCompare is -systems: each named system in turn through the same
// workload, one table.
func runCompare(ctx context.Context, names []string, floe *bench.FloeSystem, kafkaAddrs []string, t bench.Targets, probe *bench.CompareProbe,
	rc bench.RunConfig, maxP99 time.Duration, maxBuffered, maxInFlight int, command string, log *slog.Logger, progress *bench.Progress, stdout, stderr io.Writer, out string) error {
	cc := bench.CompareConfig{Run: rc, MaxP99: maxP99, Probe: probe, Command: command, Progress: progress, Logger: log}
	for _, name := range names {
		target := bench.CompareTarget{Label: systemLabels[name]}
		switch name {
		case sysFloeGRPC:
			target.System, target.BeforeRead = floe, t.BeforeRead
		case sysFloeKafka:
			if len(kafkaAddrs) == 0 {
				return fmt.Errorf("flag -systems: floe-kafka needs the agents' Kafka listeners (-start, or -kafka-addrs with -addr)")
			}
			ks, err := bench.NewKafkaSystem(bench.KafkaConfig{Name: name, Brokers: kafkaAddrs, RecordSize: rc.RecordSize,
				MaxBuffered: maxBuffered, MaxInFlight: maxInFlight, Stats: floe.Stats})
			if err != nil {
				return err
			}
			defer ks.Close()
			target.System, target.BeforeRead = ks, t.BeforeRead
		case sysKafka, sysKafkaFlush:
			// Started when its turn comes, so that only one broker
			// runs at a time.
			flush := name == sysKafkaFlush
			target.Open = func(ctx context.Context) (bench.System, func(), error) {
				return kafkaPeer(ctx, name, flush, rc, maxBuffered, maxInFlight, log, progress)
			}
		}
		cc.Targets = append(cc.Targets, target)
	}
	rep, err := bench.RunCompare(ctx, cc)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	for name, write := range map[string]func(io.Writer) error{"compare.json": rep.WriteJSON, "compare.md": rep.WriteMarkdown} {
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		werr := write(f)
		if cerr := f.Close(); werr != nil || cerr != nil {
			return fmt.Errorf("write %s: %v %v", name, werr, cerr)
		}
	}
	fmt.Fprintf(stderr, "wrote %s\n", strings.Join([]string{filepath.Join(out, "compare.json"), filepath.Join(out, "compare.md")}, ", "))
	return nil
}
