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
	exe := buildFloe(t)
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
	// Drop every read of one acknowledged value the final read had (not
	// one retention deleted): the checker must call it lost (or unseen, at
	// the head of its partition).
	logStart := map[int32]int64{}
	for _, op := range ops {
		if op.Type == history.FinalRead {
			logStart[op.Partition] = op.From
		}
	}
	var lostValue string
	for _, op := range ops {
		if op.Type == history.Send && op.Outcome == history.OK && op.Offset >= logStart[op.Partition] {
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

func buildFloe(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "floe")
	build := exec.Command("go", "build", "-o", exe, "./cmd/floe")
	build.Dir = testenv.RepoRoot()
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build floe: %v\n%s", err, out)
	}
	return exe
}

// TestRunFailover: the primary killed mid-load and the synchronous standby
// promoted: nothing acknowledged lost, no offset assigned twice, the
// agents and compactors carry on by themselves (sends are acknowledged
// after the kill).
func TestRunFailover(t *testing.T) {
	exe := buildFloe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Exe, cfg.Duration, cfg.MaxSends, cfg.Seed, cfg.OutDir = exe, 20*time.Second, 1000, 23, t.TempDir()
	cfg.Faults, cfg.Failover = nil, true
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Fatalf("anomalies %v invariants %v: %v", res.Report.Anomalies, res.Invariants, res.Report.Examples)
	}
	if res.Report.Faults[PGFailover] != 1 || res.FailoverToAck <= 0 {
		t.Fatalf("failovers %d, first ack after it %v", res.Report.Faults[PGFailover], res.FailoverToAck)
	}
	t.Logf("first acknowledged send %v after the primary was killed", res.FailoverToAck)
}

// TestRunRetentionBroken: a run whose partition 0 is emptied half-way
// through (DeleteRecords to its head, as a retention rule that ignored
// retention.ms and the table's hold would) violates retention-within-window
// (TestRunUnderFaults shows the real rule passing it, under faults).
func TestRunRetentionBroken(t *testing.T) {
	exe := buildFloe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Exe, cfg.Duration, cfg.MaxSends, cfg.Seed, cfg.OutDir = exe, 12*time.Second, 1000, 24, t.TempDir()
	cfg.Faults, cfg.breakRetention = nil, true
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("invariants %v anomalies %v trimmed %v", res.Invariants, res.Report.Anomalies, res.Report.Trimmed)
	if res.Invariants[RetentionWithin] == 0 || res.Report.Faults[RetentionBroken] != 1 {
		t.Fatalf("the broken rule went unnoticed: invariants %v, faults %v", res.Invariants, res.Report.Faults)
	}
}
