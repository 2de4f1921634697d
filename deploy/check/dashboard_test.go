package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// targetLabels are the labels Prometheus gives every scraped series: a
// metric of floe's own with one of them is renamed exported_<name> on
// scrape, and a dashboard query on the name sees the target's instead.
var targetLabels = map[string]bool{"job": true, "instance": true}

// TestMetricsHaveNoTargetLabels: no metric of docs/operations.md's table
// (generated from floe's registries) has a label Prometheus sets on the
// target, and the dashboard asks for no exported_ label.
func TestMetricsHaveNoTargetLabels(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, "<!-- metrics table:"), strings.Index(text, "<!-- end of metrics table -->")
	if i < 0 || j < i {
		t.Fatal("docs/operations.md has no metrics table")
	}
	n := 0
	for _, line := range strings.Split(text[i:j], "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 || !strings.HasPrefix(cells[0], "| `floe_") {
			continue
		}
		n++
		for _, l := range strings.Split(cells[2], ", ") {
			if l = strings.Trim(l, "`"); targetLabels[l] {
				t.Errorf("%s has the label %q, which Prometheus renames exported_%s on scrape", strings.Trim(cells[0], "| `"), l, l)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d metrics read from docs/operations.md", n)
	}
	dash, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "floe.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dash), "exported_") {
		t.Error("deploy/grafana/floe.json asks for an exported_ label (a clash with the target's)")
	}
}
