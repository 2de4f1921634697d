package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: encode report: %w", err)
	}
	return nil
}

// WriteMarkdown writes the report as Markdown: settings, limits, the
// figures with their ratios to the limits and to the peer, the goals, and
// the sweep.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "# floe benchmark\n\n")
	rate := "closed loop"
	if s.Rate > 0 {
		rate = num(s.Rate) + " records/s offered"
	}
	if s.Sweep {
		rate = "rate sweep"
	}
	fmt.Fprintf(&b, "%s; workload %s; %s, %s, %s; %d-byte records; %s; %s s measured after %s s warm-up; linger %s ms, files up to %s.\n",
		s.Deployment, s.Workload, plural(s.Partitions, "partition"), plural(s.Producers, "producer"), plural(s.Consumers, "consumer"), s.RecordSize, rate,
		num(s.DurationSeconds), num(s.WarmupSeconds), num(s.LingerMs), byteSize(float64(s.MaxFileBytes)))
	fmt.Fprintf(&b, "Host: %d CPUs, %s, %s. Started %s.\n", r.Host.CPUs, r.Host.OS, r.Host.GoVersion, r.Started.Format("2006-01-02 15:04 UTC"))
	if s.Command != "" {
		fmt.Fprintf(&b, "\n```\n%s\n```\n", s.Command)
	}

	r.writeLimits(&b)
	r.writeFigures(&b)
	writeBreakdown(&b, r.Floe)

	fmt.Fprintf(&b, "\n## Goals\n\n")
	for _, g := range r.Goals {
		fmt.Fprintf(&b, "- **%s** %s: %s; target %s", strings.ToUpper(g.Status), g.Title, g.Measured, g.Target)
		if g.Note != "" {
			fmt.Fprintf(&b, " (%s)", g.Note)
		}
		b.WriteString(".\n")
	}

	if len(r.FloeSweep) > 0 || len(r.PeerSweep) > 0 {
		fmt.Fprintf(&b, "\n## Sweep\n\n")
		fmt.Fprintf(&b, "| system | offered rec/s | acked rec/s | MB/s | produce p50 ms | p99 ms | p99.9 ms | max ms | e2e p99 ms | followed | machine CPU busy |\n")
		fmt.Fprintf(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n")
		row := func(x RunResult) {
			e2e := "—"
			if x.E2E != nil {
				e2e = num(x.E2E.P99Ms)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.System, rateCell(x.TargetRate),
				num(x.RecordsPerSec), num(x.MBPerSec), num(x.Produce.P50Ms), num(x.Produce.P99Ms), num(x.Produce.P999Ms),
				num(x.Produce.MaxMs), e2e, r.keptUp(x), busyCell(x))
		}
		if r.FloeMax != nil {
			row(*r.FloeMax)
		}
		for _, x := range r.FloeSweep {
			row(x)
		}
		if r.PeerMax != nil {
			row(*r.PeerMax)
		}
		for _, x := range r.PeerSweep {
			row(x)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(&b, "\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeLimits(b *strings.Builder) {
	fmt.Fprintf(b, "\n## Limits of this machine, measured in the same run\n\n")
	if r.Limits.StoreMax == nil && r.Limits.Commit == nil {
		fmt.Fprintf(b, "Not measured.\n")
		return
	}
	fmt.Fprintf(b, "| limit | throughput | p50 ms | p99 ms | max ms |\n| --- | ---: | ---: | ---: | ---: |\n")
	store := func(st *StoreLimits, what string) {
		if st == nil {
			return
		}
		fmt.Fprintf(b, "| raw PUT, %s objects%s, %d concurrent (%s) | %s MB/s, %s PUT/s | %s | %s | %s |\n",
			byteSize(float64(st.ObjectBytes)), what, st.Concurrency, st.Store, num(st.Put.MBPerSec), num(st.Put.OpsPerSec),
			num(st.Put.Latency.P50Ms), num(st.Put.Latency.P99Ms), num(st.Put.Latency.MaxMs))
		fmt.Fprintf(b, "| raw GET, %s objects%s, %d concurrent (%s) | %s MB/s, %s GET/s | %s | %s | %s |\n",
			byteSize(float64(st.ObjectBytes)), what, st.Concurrency, st.Store, num(st.Get.MBPerSec), num(st.Get.OpsPerSec),
			num(st.Get.Latency.P50Ms), num(st.Get.Latency.P99Ms), num(st.Get.Latency.MaxMs))
	}
	store(r.Limits.StoreMax, "")
	store(r.Limits.StoreFlush, " (floe's mean flush)")
	if c := r.Limits.Commit; c != nil {
		fmt.Fprintf(b, "| raw commit, one-row INSERT transaction (%s) | %s commits/s | %s | %s | %s |\n",
			c.Store, num(c.PerSecond), num(c.Latency.P50Ms), num(c.Latency.P99Ms), num(c.Latency.MaxMs))
	}
	if p50, ok := r.LatencyFloor(func(s Summary) float64 { return s.P50Ms }); ok {
		p99, _ := r.LatencyFloor(func(s Summary) float64 { return s.P99Ms })
		mx, _ := r.LatencyFloor(func(s Summary) float64 { return s.MaxMs })
		fmt.Fprintf(b, "| produce floor: linger + raw PUT + raw commit | — | %s | %s | %s |\n", num(p50), num(p99), num(mx))
	}
}

func (r *Report) writeFigures(b *strings.Builder) {
	fmt.Fprintf(b, "\n## Figures\n\n")
	peer := r.Peer
	peerName := r.Settings.Peer
	head := "| figure | floe | limit | floe ÷ limit |"
	sep := "| --- | ---: | ---: | ---: |"
	if peerName != "" {
		head += fmt.Sprintf(" %s | floe ÷ %s |", peerName, peerName)
		sep += " ---: | ---: |"
	}
	fmt.Fprintf(b, "%s\n%s\n", head, sep)
	f := r.Floe
	row := func(name string, v float64, limit float64, limitWhat string, pv float64, havePeer bool) {
		lim, ratio := "—", "—"
		if limit > 0 {
			lim = num(limit)
			if limitWhat != "" {
				lim += " (" + limitWhat + ")"
			}
			ratio = fmt.Sprintf("%.2f", v/limit)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |", name, num(v), lim, ratio)
		if peerName != "" {
			if havePeer {
				pr := "—"
				if pv > 0 {
					pr = fmt.Sprintf("%.2f", v/pv)
				}
				fmt.Fprintf(b, " %s | %s |", num(pv), pr)
			} else {
				b.WriteString(" — | — |")
			}
		}
		b.WriteString("\n")
	}
	hp := peer != nil
	pget := func(fn func(RunResult) float64) float64 {
		if peer == nil {
			return 0
		}
		return fn(*peer)
	}
	var rawPut, rawGet float64
	if st := r.Limits.StoreMax; st != nil {
		rawPut, rawGet = st.Put.MBPerSec, st.Get.MBPerSec
	}
	if f.Catchup == nil {
		row("throughput, records/s", f.RecordsPerSec, 0, "", pget(func(x RunResult) float64 { return x.RecordsPerSec }), hp)
		row("throughput, MB/s", f.MBPerSec, rawPut, "raw PUT", pget(func(x RunResult) float64 { return x.MBPerSec }), hp)
	}
	if mx, from := r.MaxIngest(); r.FloeMax != nil || f.Catchup != nil || f.TargetRate <= 0 {
		var pm float64
		havePM := false
		if m, ok := r.PeerMaxIngest(); ok {
			pm, havePM = m, true
		} else if peer != nil && peer.Catchup != nil {
			pm, havePM = peer.Catchup.WriteMBPerSec, true
		} else if peer != nil && peer.TargetRate <= 0 {
			pm, havePM = peer.MBPerSec, true
		}
		row("max ingest, MB/s ("+from+")", mx, rawPut, "raw PUT", pm, havePM)
	}
	pct := []struct {
		name string
		fn   func(Summary) float64
	}{
		{"p50", func(s Summary) float64 { return s.P50Ms }},
		{"p90", func(s Summary) float64 { return s.P90Ms }},
		{"p99", func(s Summary) float64 { return s.P99Ms }},
		{"p99.9", func(s Summary) float64 { return s.P999Ms }},
		{"max", func(s Summary) float64 { return s.MaxMs }},
	}
	for _, p := range pct {
		floor, _ := r.LatencyFloor(p.fn)
		row("produce latency "+p.name+", ms", p.fn(f.Produce), floor, "floor", pget(func(x RunResult) float64 { return p.fn(x.Produce) }), hp)
	}
	if f.E2E != nil {
		for _, p := range pct {
			floor, _ := r.LatencyFloor(p.fn)
			pv, hv := 0.0, false
			if peer != nil && peer.E2E != nil {
				pv, hv = p.fn(*peer.E2E), true
			}
			row("end-to-end latency "+p.name+", ms", p.fn(*f.E2E), floor, "floor", pv, hv)
		}
	}
	if c := f.Catchup; c != nil {
		var pv float64
		if peer != nil && peer.Catchup != nil {
			pv = peer.Catchup.ReadMBPerSec
		}
		row("catch-up read, MB/s", c.ReadMBPerSec, rawGet, "raw GET", pv, peer != nil && peer.Catchup != nil)
		row("catch-up backlog, MB", float64(c.BacklogBytes)/1e6, 0, "", 0, false)
		row("catch-up GETs per MB read", c.ReadCost.GETsPerMB, 0, "", 0, false)
		row("catch-up agent CPU, ms per MiB read", c.ReadCost.CPUMsPerMiB, 0, "", 0, false)
		if c.ClientCPUMsPerMiB > 0 {
			row("catch-up harness (consumer) CPU, ms per MiB read", c.ClientCPUMsPerMiB, 0, "", 0, false)
		}
	}
	c := f.Cost
	row("object PUTs per second", c.PUTsPerSec, 0, "", 0, false)
	row("object PUTs per MB", c.PUTsPerMB, 0, "", 0, false)
	row("object GETs per second", c.GETsPerSec, 0, "", 0, false)
	row("object GETs per MB", c.GETsPerMB, 0, "", 0, false)
	row("metadata commits per second", c.CommitsPerSec, 0, "", 0, false)
	row("metadata commits per MB", c.CommitsPerMB, 0, "", 0, false)
	row("PUTs per flush", c.PUTsPerFlush, 1, "goal", 0, false)
	row("commits per flush", c.CommitsPerFlush, 1, "goal", 0, false)
	row("mean flush, KiB", c.MeanFlushBytes/1024, float64(r.Settings.MaxFileBytes)/1024, "max file", 0, false)
	cpu := c
	cpuWhat := ""
	var peerCPU *Cost
	if peer != nil {
		peerCPU = &peer.Cost
	}
	if r.FloeMax != nil {
		cpu, cpuWhat = r.FloeMax.Cost, ", closed loop"
		if r.PeerMax != nil {
			peerCPU = &r.PeerMax.Cost
		}
	}
	pcpu := func(fn func(Cost) float64) float64 {
		if peerCPU == nil {
			return 0
		}
		return fn(*peerCPU)
	}
	row("server CPU, ms per MiB"+cpuWhat, cpu.CPUMsPerMiB, 20, "goal", pcpu(func(c Cost) float64 { return c.CPUMsPerMiB }), peerCPU != nil)
	row("server CPU, s per GiB"+cpuWhat, cpu.CPUSecPerGiB, 20*1024/1000.0, "goal", pcpu(func(c Cost) float64 { return c.CPUSecPerGiB }), peerCPU != nil)
	peak := 0.0
	for _, run := range r.floeRuns() {
		peak = math.Max(peak, run.Cost.PeakRSSBytes)
	}
	ppeak := 0.0
	for _, run := range append(append([]RunResult(nil), r.PeerSweep...), derefRuns(r.Peer, r.PeerMax)...) {
		ppeak = math.Max(ppeak, run.Cost.PeakRSSBytes)
	}
	bound := float64(r.Settings.MaxBufferedBytes+r.Settings.CacheBytes+memoryOverhead) / (1 << 20)
	row("peak server RSS, MiB", peak/(1<<20), bound, "bound", ppeak/(1<<20), peer != nil)
}

func derefRuns(rs ...*RunResult) []RunResult {
	var out []RunResult
	for _, r := range rs {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}

func rateCell(r float64) string {
	if r <= 0 {
		return "closed loop"
	}
	return num(r)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// num formats a figure with three significant digits or so, and
// thousands separators.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return thousands(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 0.01:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

func thousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// byteSize renders a byte count in binary units.
func byteSize(v float64) string {
	switch {
	case v >= 1<<30:
		return num(v/(1<<30)) + " GiB"
	case v >= 1<<20:
		return num(v/(1<<20)) + " MiB"
	case v >= 1<<10:
		return num(v/(1<<10)) + " KiB"
	default:
		return num(v) + " B"
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
