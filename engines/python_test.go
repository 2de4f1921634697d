//go:build engines

package engines

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// answer is what an engine script (engines/py) writes.
type answer struct {
	Namespaces []string         `json:"namespaces"`
	Tables     []string         `json:"tables"`
	Rows       map[string][]row `json:"rows"`
	Vectorized map[string][]row `json:"vectorized"`
	DayCounts  map[string]int   `json:"day_counts"`
	Filter     *filterAnswer    `json:"filter"`
	Snapshots  []snapshotAnswer `json:"snapshots"`
	History    []int64          `json:"history"`
	Live       *liveAnswer      `json:"live"`
	RestRows   map[string][]row `json:"rest_rows"`
	Timings    []timing         `json:"timings"`
}

type timing struct {
	SQL     string  `json:"sql"`
	Seconds float64 `json:"seconds"`
	Result  string  `json:"result"`
}

type filterAnswer struct {
	Count      int `json:"count"`
	FilesRead  int `json:"files_read"`  // 0: not reported
	FilesTotal int `json:"files_total"` // 0: not reported
}

type snapshotAnswer struct {
	ID           int64  `json:"id"`
	Operation    string `json:"operation"`
	TotalRecords int64  `json:"total_records"` // -1 or 0: not reported
	Watermark    string `json:"watermark"`
	Count        int64  `json:"count"` // rows read at the snapshot (time travel)
}

type liveAnswer struct {
	Counts [][2]int64 `json:"counts"` // count(*), count(distinct partition, offset) per query
	Totals []int64    `json:"totals"` // total-records of every snapshot after
}

// runPy runs engines/py/SCRIPT with the venv's Python, job on stdin, and
// decodes its answer.
func runPy(t *testing.T, ctx context.Context, script string, job any, env ...string) answer {
	t.Helper()
	py := filepath.Join(need(t, "venv"), "bin", "python")
	in, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("py", script))
	cmd.Env = append(os.Environ(), append([]string{"TZ=UTC", "PYTHONPATH=py"}, env...)...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, tail(stderr.Bytes(), 8000))
	}
	t.Logf("%s: %v", script, time.Since(start).Round(time.Millisecond))
	var a answer
	if err := json.Unmarshal(stdout.Bytes(), &a); err != nil {
		t.Fatalf("%s: answer: %v\n%s\n%s", script, err, tail(stdout.Bytes(), 2000), tail(stderr.Bytes(), 4000))
	}
	return a
}
