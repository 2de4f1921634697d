package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCompareConfigValidate(t *testing.T) {
	sys := &KafkaSystem{cfg: KafkaConfig{Name: "k"}}
	open := func(context.Context) (System, func(), error) { return sys, func() {}, nil }
	for name, c := range map[string]CompareConfig{
		"no targets": {},
		"neither":    {Targets: []CompareTarget{{Label: "x"}}},
		"both":       {Targets: []CompareTarget{{Label: "x", System: sys, Open: open}}},
	} {
		if _, err := RunCompare(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCompareMarkdown(t *testing.T) {
	rep := &CompareReport{Host: Host{CPUs: 2, OS: "linux/amd64"}, Command: "floe-bench -systems kafka", Run: DefaultRunConfig(),
		Rows: []CompareRow{{
			System: "kafka", Label: "Apache Kafka 4.1 (flush.messages=1)",
			Max:     RunResult{RecordsPerSec: 12345, MBPerSec: 12.6},
			Half:    RunResult{Produce: Summary{P99Ms: 4.25}, Cost: Cost{CPUMsPerMiB: 31.5}},
			Catchup: &RunResult{Catchup: &CatchupResult{ReadMBPerSec: 250.04}},
		}, {
			System: "floe-grpc", Label: "floe over gRPC",
			Max:  RunResult{RecordsPerSec: 900, MBPerSec: 0.9},
			Half: RunResult{Produce: Summary{P99Ms: 300}},
		}}}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`floe-bench -systems kafka`",
		"| Apache Kafka 4.1 (flush.messages=1) | 12345 | 12.6 | 4.2 | 31.5 | 250.0 |",
		// No server CPU figure and no catch-up: dashes, not zeros.
		"| floe over gRPC | 900 | 0.9 | 300.0 | – | – |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
