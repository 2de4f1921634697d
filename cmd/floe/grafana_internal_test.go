package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documentedMetrics reads the metrics table of docs/operations.md: name
// -> type and labels.
func documentedMetrics(t *testing.T) map[string]metricDoc {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, metricsBegin), strings.Index(text, metricsEnd)
	if i < 0 || j < i {
		t.Fatal("docs/operations.md has no metrics table")
	}
	out := map[string]metricDoc{}
	for _, line := range strings.Split(text[i+len(metricsBegin):j], "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 || !strings.HasPrefix(cells[0], "| `floe_") {
			continue
		}
		m := metricDoc{name: strings.Trim(cells[0], "| `"), typ: cells[1]}
		if cells[2] != "—" {
			for _, l := range strings.Split(cells[2], ", ") {
				m.labels = append(m.labels, strings.Trim(l, "`"))
			}
		}
		out[m.name] = m
	}
	return out
}

// exprs collects every "expr" string of a Grafana dashboard.
func exprs(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "expr" {
				*out = append(*out, s)
				continue
			}
			exprs(e, out)
		}
	case []any:
		for _, e := range x {
			exprs(e, out)
		}
	}
}

var (
	metricRefRE = regexp.MustCompile(`\b(floe_[a-z0-9_]+)(\{[^}]*\})?`)
	matcherRE   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	byRE        = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
)

// TestGrafanaDashboardUsesDocumentedMetrics: every query of
// deploy/grafana/floe.json names only metrics of the documented table
// (histogram series by their _bucket, _sum or _count), filters and groups
// only by their labels, and the dashboard covers produce, fetch, batcher,
// stores, groups and compactor.
func TestGrafanaDashboardUsesDocumentedMetrics(t *testing.T) {
	documented := documentedMetrics(t)
	if len(documented) < 20 {
		t.Fatalf("only %d documented metrics read", len(documented))
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "floe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("floe.json: %v", err)
	}
	var es []string
	exprs(dash, &es)
	if len(es) < 20 {
		t.Fatalf("only %d queries in the dashboard", len(es))
	}
	used := map[string]bool{}
	for _, e := range es {
		refs := metricRefRE.FindAllStringSubmatch(e, -1)
		if len(refs) == 0 {
			t.Errorf("query %q names no floe metric", e)
		}
		labels := map[string]bool{"instance": true, "job": true}
		for _, r := range refs {
			name, m, ok := r[1], metricDoc{}, false
			if m, ok = documented[name]; !ok {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if base, found := strings.CutSuffix(name, suf); found && documented[base].typ == "histogram" {
						m, ok = documented[base], true
						if suf == "_bucket" {
							labels["le"] = true
						}
					}
				}
			}
			if !ok {
				t.Errorf("query %q: %s is not a documented metric", e, name)
				continue
			}
			used[m.name] = true
			own := map[string]bool{}
			for _, l := range m.labels {
				own[l], labels[l] = true, true
			}
			for _, mm := range matcherRE.FindAllStringSubmatch(r[2], -1) {
				if !own[mm[1]] {
					t.Errorf("query %q: %s has no label %q", e, m.name, mm[1])
				}
			}
		}
		for _, by := range byRE.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(by[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					t.Errorf("query %q groups by %q, a label of none of its metrics", e, l)
				}
			}
		}
	}
	for _, prefix := range []string{"floe_produce", "floe_fetched", "floe_rpc_", "floe_batcher_seals", "floe_objectstore_requests",
		"floe_metadata_commit_duration", "floe_group_lag", "floe_compactor_passes", "floe_compactor_deletion_queue", "floe_compactor_log_start"} {
		found := false
		for n := range used {
			found = found || strings.HasPrefix(n, prefix)
		}
		if !found {
			t.Errorf("the dashboard has no panel on %s*", prefix)
		}
	}
}
