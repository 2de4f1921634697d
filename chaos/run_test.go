//go:build chaos

package chaos

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-broker/floe/chaos/history"
	"github.com/floe-broker/floe/internal/testenv"
)

// TestRunUnderFaults is a short campaign run (make chaos runs longer
// ones): every fault kind may be drawn, the history must check clean and
// the stores' invariants hold; then the checker is shown to catch a lost
// write in that real history.
func TestRunUnderFaults(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "floe")
	build := exec.Command("go", "build", "-o", exe, "./cmd/floe")
	build.Dir = testenv.RepoRoot()
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build floe: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Exe, cfg.Duration, cfg.MaxSends, cfg.Seed, cfg.OutDir = exe, 25*time.Second, 1000, 22, t.TempDir()
	var ops []history.Op
	cfg.keepOps = func(o []history.Op) { ops = o }
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	t.Logf("faults %v sends %v reads %d table rows %d", r.Faults, r.Sends, r.Reads, r.TableRows)
	if res.Failed() {
		t.Fatalf("anomalies %v invariants %v: %v (history %s)", r.Anomalies, res.Invariants, r.Examples, res.HistoryPath)
	}
	if len(r.Faults) == 0 || r.Sends[history.OK] == 0 || r.TableRows == 0 {
		t.Fatalf("the run did not exercise anything: faults %v sends %v table rows %d", r.Faults, r.Sends, r.TableRows)
	}
	// Drop every read of one acknowledged value: the checker must call it
	// lost (or unseen, at the head of its partition).
	var lostValue string
	for _, op := range ops {
		if op.Type == history.Send && op.Outcome == history.OK {
			lostValue = op.Value
			break
		}
	}
	var mutated []history.Op
	for _, op := range ops {
		if (op.Type == history.Read || op.Type == history.Table) && op.Value == lostValue {
			continue
		}
		mutated = append(mutated, op)
	}
	m := history.Check(mutated)
	if m.Anomalies[history.Lost]+m.Anomalies[history.Unseen] != 1 || m.Anomalies[history.Hole] != 1 {
		t.Fatalf("after dropping the reads of %s: anomalies %v", lostValue, m.Anomalies)
	}
}
