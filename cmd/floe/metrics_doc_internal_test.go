package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// recordingRegisterer keeps every collector registered through it.
type recordingRegisterer struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// kafkaNop is a Kafka backend for registering the Kafka server's metrics
// (never called).
type kafkaNop struct{ kafka.Backend }

// metricDoc is one metric as the code declares it.
type metricDoc struct {
	name, typ, help string
	labels          []string
}

var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]*)", help: ("(?:[^"\\]|\\.)*"), unit: "[^"]*", constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// serverMetrics registers what floe's servers register (agent, batcher,
// object store wrapper, compactor, group lag, gRPC calls) and returns
// every floe_ metric they declare, sorted by name.
func serverMetrics(t *testing.T) []metricDoc {
	t.Helper()
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	// A group with a position, so that the lag collector exports samples.
	tp, err := meta.CreateTopic(ctx, metadata.TopicSpec{Name: "m", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "g", Offsets: []metadata.OffsetCommit{{TopicID: tp.ID, Partition: 0, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	rec := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	rec.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	store := objectstore.WithMetrics(objectstore.NewMemory(), rec)
	b, err := batcher.New(batcher.DefaultConfig(), store, meta, batcher.Options{Metrics: batcher.NewMetrics(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	if _, err := agent.New(agent.DefaultConfig(), meta, store, b, agent.Options{Registry: rec}); err != nil {
		t.Fatal(err)
	}
	cc := compactor.DefaultConfig()
	cc.Owner, cc.Registerer = "test", rec
	if _, err := compactor.New(meta, store, cc); err != nil {
		t.Fatal(err)
	}
	if _, err := kafka.New(kafka.DefaultConfig(), kafkaNop{}, kafka.Options{Registry: rec}); err != nil {
		t.Fatal(err)
	}
	newRPCMetrics(rec)
	tlsMetricsWithListener(t, rec) // tls_internal_test.go

	byName := map[string]*metricDoc{}
	for _, c := range rec.collectors {
		descs := make(chan *prometheus.Desc, 1024)
		c.Describe(descs)
		close(descs)
		typeOf := collectorType(c)
		for d := range descs {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read %s", d)
			}
			if !strings.HasPrefix(m[1], "floe_") {
				continue
			}
			help, err := strconv.Unquote(m[2])
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			if m[3] != "" {
				labels = strings.Split(m[3], ",")
			}
			byName[m[1]] = &metricDoc{name: m[1], typ: typeOf, help: help, labels: labels}
		}
		// Collectors of their own (the group lag) tell their types by the
		// samples they export.
		ms := make(chan prometheus.Metric, 1024)
		c.Collect(ms)
		close(ms)
		for s := range ms {
			m := descRE.FindStringSubmatch(s.Desc().String())
			if m == nil || byName[m[1]] == nil {
				continue
			}
			var pb dto.Metric
			if err := s.Write(&pb); err != nil {
				t.Fatal(err)
			}
			switch {
			case pb.Counter != nil:
				byName[m[1]].typ = "counter"
			case pb.Gauge != nil:
				byName[m[1]].typ = "gauge"
			case pb.Histogram != nil:
				byName[m[1]].typ = "histogram"
			case pb.Summary != nil:
				byName[m[1]].typ = "summary"
			}
		}
	}
	var out []metricDoc
	for _, m := range byName {
		if m.typ == "" {
			// Only floe_group_time_to_retention_seconds may be absent
			// (no retention): its siblings are gauges.
			m.typ = "gauge"
			if !strings.HasPrefix(m.name, "floe_group_") {
				t.Fatalf("type of %s unknown: teach collectorType its collector", m.name)
			}
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// collectorType is the type of the metrics of the client library's
// collectors ("" for collectors of their own).
func collectorType(c prometheus.Collector) string {
	switch c.(type) {
	case prometheus.Counter, *prometheus.CounterVec:
		return "counter"
	case prometheus.Gauge, *prometheus.GaugeVec:
		return "gauge"
	case prometheus.Histogram, *prometheus.HistogramVec:
		return "histogram"
	case prometheus.Summary, *prometheus.SummaryVec:
		return "summary"
	}
	return ""
}

// metricsTable renders the metrics as the Markdown table of
// docs/operations.md.
func metricsTable(ms []metricDoc) string {
	var b strings.Builder
	b.WriteString("| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n")
	for _, m := range ms {
		labels := "—"
		if len(m.labels) > 0 {
			labels = "`" + strings.Join(m.labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.name, m.typ, labels, strings.ReplaceAll(m.help, "|", "\\|"))
	}
	return b.String()
}

const (
	metricsBegin = "<!-- metrics table: generated by TestMetricsDocumented (FLOE_UPDATE_DOCS=1 rewrites it) -->\n"
	metricsEnd   = "<!-- end of metrics table -->\n"
)

// TestMetricsDocumented: docs/operations.md lists every floe_ metric the
// servers register, with its type and labels, and no other.
func TestMetricsDocumented(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "operations.md")
	want := metricsTable(serverMetrics(t))
	if err := checkGeneratedDoc(path, metricsBegin, metricsEnd, want, os.Getenv); err != nil {
		t.Fatalf("%v; run FLOE_UPDATE_DOCS=1 go test -run TestMetricsDocumented ./cmd/floe/ (not under CI). Want:\n%s", err, want)
	}
}
