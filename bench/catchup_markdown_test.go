package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestMarkdownCatchupCPU: a catch-up report names the agents' and the
// harness's CPU per MiB read (the goal is per MiB served), not only
// the ingest's.
func TestMarkdownCatchupCPU(t *testing.T) {
	r := fixtureReport()
	r.Floe.Catchup = &CatchupResult{BacklogBytes: 1e9, ReadMBPerSec: 300, ReadCost: Cost{GETsPerMB: 0.12, CPUMsPerMiB: 1.25}, ClientCPUMsPerMiB: 0.98}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| catch-up agent CPU, ms per MiB read | 1.25 |", "| catch-up harness (consumer) CPU, ms per MiB read | 0.98 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}
