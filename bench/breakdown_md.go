package bench

import (
	"fmt"
	"strings"
	"time"
)

// writeBreakdown renders where the headline run's produce latency and the
// machine's CPU went.
func writeBreakdown(b *strings.Builder, x RunResult) {
	bd := x.Breakdown
	if bd == nil {
		return
	}
	fmt.Fprintf(b, "\n## Where the produce latency went (%s, %s)\n\n", x.System, rateLabel(x.TargetRate))
	fmt.Fprintf(b, "| stage | count | p50 ms | p99 ms |\n| --- | ---: | ---: | ---: |\n")
	fmt.Fprintf(b, "| produce latency (intended send time → acknowledged) | %s | %s | %s |\n", count(float64(x.Produce.Count)), num(x.Produce.P50Ms), num(x.Produce.P99Ms))
	sum := func(name string, s Summary) {
		if s.Count > 0 {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, count(float64(s.Count)), num(s.P50Ms), num(s.P99Ms))
		}
	}
	quant := func(name string, q Quantiles) {
		if q.Count > 0 {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, count(q.Count), num(q.P50Ms), num(q.P99Ms))
		}
	}
	sum("harness: intended → request handed to the client (tick, generator lateness)", bd.SendLag)
	sum("harness: handing a request over (in-flight slot, encoding, stream write), per request", bd.SendCall)
	sum("harness: request handed over → acknowledged", bd.Answer)
	quant("agents: request received → acknowledged, per request", bd.AgentProduce)
	quant("agents: file sealed → committed, per file", bd.SealToCommit)
	quant("agents: upload, per file", bd.Upload)
	quant("agents: metadata commit, per call", bd.Commit)
	fmt.Fprintf(b, "\nGC: agents %s pauses/s, mean %s ms; harness %s ms of pauses in the window. Goroutine scheduling latency p99 (waiting for a CPU): agents %s ms, harness %s ms.\n",
		num(bd.AgentGCPausesPerSec), num(bd.AgentGCPauseMeanMs), num(bd.HarnessGCPauseMs), num(bd.AgentSchedP99Ms), num(bd.HarnessSchedP99Ms))
	c := bd.CPU
	fmt.Fprintf(b, "CPU over the window, in cores of %d: machine %s (%s niced), harness %s, servers %s, services %s, other work %s.\n",
		c.Cores, num(c.Machine), num(c.MachineNiced), num(c.Harness), num(c.Servers), num(c.Services), num(c.Others()))
}

// busyCell is a run's machine CPU, percent of its cores.
func busyCell(x RunResult) string {
	if x.Breakdown == nil || x.Breakdown.CPU.Machine <= 0 {
		return "—"
	}
	c := x.Breakdown.CPU
	return fmt.Sprintf("%.0f%% (ours %.0f%%)", 100*c.Busy(), 100*(c.Harness+c.Servers+c.Services)/float64(c.Cores))
}

func count(v float64) string { return thousands(fmt.Sprintf("%.0f", v)) }

// keptUp says how a swept run kept up with its offer: sustained (the
// sweep's criterion: it goes on), followed only (it stops there), or no.
func (r *Report) keptUp(x RunResult) string {
	switch {
	case x.TargetRate > 0 && r.Settings.SweepMaxP99Ms > 0 && x.Sustained(time.Duration(r.Settings.SweepMaxP99Ms*float64(time.Millisecond))):
		return "sustained"
	case x.Followed():
		return "yes"
	}
	return "no"
}
