package bench

import (
	"math"
	"regexp"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
)

// Breakdown is where a run's produce latency went over its measured
// window: the harness's own timing of each record (before its request was
// handed to the client, and from there to the answer), the agents'
// histograms of the stages behind an acknowledgement, the agents' and the
// harness's GC and scheduling delays, and the machine's CPU.
type Breakdown struct {
	// SendLag is, per record, from its intended send time to the call
	// that hands its request to the client (the batching tick and the
	// generator's own lateness: a starved harness shows here).
	SendLag Summary `json:"send_lag"`
	// SendCall is, per request, how long handing it to the client took
	// (waiting for an in-flight slot, encoding, writing to the stream).
	SendCall Summary `json:"send_call"`
	// Answer is, per record, from that call to the acknowledgement: the
	// request's round trip, SendCall included.
	Answer Summary `json:"answer"`
	// Agent stages, from the agents' Prometheus histograms (bucketed:
	// interpolated within powers of two), zero when not exported.
	AgentProduce Quantiles `json:"agent_produce"`  // floe_produce_duration_seconds{code="OK"}: request received to acknowledged
	SealToCommit Quantiles `json:"seal_to_commit"` // floe_batcher_flush_duration_seconds
	Upload       Quantiles `json:"upload"`         // floe_batcher_upload_duration_seconds
	Commit       Quantiles `json:"commit"`         // floe_metadata_commit_duration_seconds
	// AgentGCPauses is the agents' stop-the-world GC pauses over the
	// window (go_gc_duration_seconds): how many per second and their mean.
	AgentGCPausesPerSec float64 `json:"agent_gc_pauses_per_sec"`
	AgentGCPauseMeanMs  float64 `json:"agent_gc_pause_mean_ms"`
	// AgentSchedP99Ms is the agents' goroutine scheduling latency at p99
	// (go_sched_latencies_seconds, runnable to running): how long their
	// goroutines waited for a CPU. Zero when not exported.
	AgentSchedP99Ms float64 `json:"agent_sched_p99_ms"`
	// HarnessSchedP99Ms is the harness's goroutine scheduling latency
	// (runnable to running, runtime/metrics) at p99: how long the
	// producers and consumers waited for a CPU.
	HarnessSchedP99Ms float64 `json:"harness_sched_p99_ms"`
	// HarnessGCPauseMs is the harness's total stop-the-world GC pause
	// time over the window.
	HarnessGCPauseMs float64 `json:"harness_gc_pause_ms"`
	// CPU is the machine's CPU over the window.
	CPU CPUUse `json:"cpu"`
}

// Quantiles are a histogram's headline quantiles in milliseconds.
type Quantiles struct {
	Count float64 `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// agentStages fills the agent stages from a window's metrics delta.
func (b *Breakdown) agentStages(d Metrics, secs float64) {
	b.AgentProduce = histQuantiles(d, "floe_produce_duration_seconds", "code", "OK")
	b.SealToCommit = histQuantiles(d, "floe_batcher_flush_duration_seconds")
	b.Upload = histQuantiles(d, "floe_batcher_upload_duration_seconds")
	b.Commit = histQuantiles(d, "floe_metadata_commit_duration_seconds")
	if q := histQuantiles(d, "go_sched_latencies_seconds"); q.Count > 0 {
		b.AgentSchedP99Ms = q.P99Ms
	}
	if n := d.Sum("go_gc_duration_seconds_count"); n > 0 && secs > 0 {
		b.AgentGCPausesPerSec = n / secs
		b.AgentGCPauseMeanMs = d.Sum("go_gc_duration_seconds_sum") / n * 1000
	}
}

func histQuantiles(d Metrics, name string, match ...string) Quantiles {
	q := Quantiles{Count: d.Sum(name+"_count", match...)}
	if q.Count <= 0 {
		return Quantiles{}
	}
	q.P50Ms = HistQuantile(d, name, 0.5, match...) * 1000
	q.P99Ms = HistQuantile(d, name, 0.99, match...) * 1000
	return q
}

var leLabel = regexp.MustCompile(`le="([^"]+)"`)

// HistQuantile estimates quantile q of the Prometheus histogram name (its
// _bucket series whose labels include every pair of match, summed over
// the other labels) as histogram_quantile does: linear within the bucket
// that holds it; the highest finite bound when it falls in +Inf. NaN when
// the histogram is empty.
func HistQuantile(m Metrics, name string, q float64, match ...string) float64 {
	prefix := name + "_bucket{"
	byLE := map[float64]float64{}
	for key, v := range m {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			if !strings.Contains(key, match[i]+"="+strconv.Quote(match[i+1])) {
				ok = false
				break
			}
		}
		sm := leLabel.FindStringSubmatch(key)
		if !ok || sm == nil {
			continue
		}
		le, err := parseFloat(sm[1])
		if err != nil {
			continue
		}
		byLE[le] += v
	}
	les := make([]float64, 0, len(byLE))
	for le := range byLE {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) == 0 || byLE[les[len(les)-1]] <= 0 {
		return math.NaN()
	}
	total := byLE[les[len(les)-1]]
	rank := q * total
	lowLE, lowCount := 0.0, 0.0
	for _, le := range les {
		c := byLE[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return lowLE
			}
			if c == lowCount {
				return le
			}
			return lowLE + (le-lowLE)*(rank-lowCount)/(c-lowCount)
		}
		lowLE, lowCount = le, c
	}
	return lowLE
}

// runtimeSample is the harness's scheduling-latency and GC-pause
// histograms at one instant.
type runtimeSample struct {
	sched, gc *metrics.Float64Histogram
}

const (
	schedLatencies = "/sched/latencies:seconds"
	gcPauses       = "/sched/pauses/total/gc:seconds"
)

func sampleRuntime() runtimeSample {
	s := []metrics.Sample{{Name: schedLatencies}, {Name: gcPauses}}
	metrics.Read(s)
	var out runtimeSample
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		out.sched = s[0].Value.Float64Histogram()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		out.gc = s[1].Value.Float64Histogram()
	}
	return out
}

// harnessRuntime fills the harness's figures from two samples.
func (b *Breakdown) harnessRuntime(a, z runtimeSample) {
	if a.sched != nil && z.sched != nil {
		b.HarnessSchedP99Ms = runtimeQuantile(a.sched, z.sched, 0.99) * 1000
	}
	if a.gc != nil && z.gc != nil {
		b.HarnessGCPauseMs = runtimeSum(a.gc, z.gc) * 1000
	}
}

// runtimeQuantile is quantile q of the observations between two readings
// of one runtime/metrics histogram (the upper bound of its bucket).
func runtimeQuantile(a, z *metrics.Float64Histogram, q float64) float64 {
	if len(a.Counts) != len(z.Counts) {
		return 0
	}
	var total uint64
	for i := range z.Counts {
		total += z.Counts[i] - a.Counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range z.Counts {
		seen += z.Counts[i] - a.Counts[i]
		if seen >= rank {
			if hi := z.Buckets[i+1]; !math.IsInf(hi, 1) {
				return hi
			}
			return z.Buckets[i]
		}
	}
	return 0
}

// runtimeSum estimates the sum of the observations between two readings
// (each at its bucket's midpoint).
func runtimeSum(a, z *metrics.Float64Histogram) float64 {
	if len(a.Counts) != len(z.Counts) {
		return 0
	}
	sum := 0.0
	for i := range z.Counts {
		n := z.Counts[i] - a.Counts[i]
		if n == 0 {
			continue
		}
		lo, hi := z.Buckets[i], z.Buckets[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		sum += float64(n) * (lo + hi) / 2
	}
	return sum
}

// sendTiming collects the harness's per-record timing of one run.
type sendTiming struct {
	lag, call, answer *Histogram
}

func newSendTiming() *sendTiming {
	return &sendTiming{lag: NewHistogram(), call: NewHistogram(), answer: NewHistogram()}
}

func (t *sendTiming) fill(b *Breakdown) {
	if t == nil {
		return
	}
	b.SendLag, b.SendCall, b.Answer = t.lag.Summary(), t.call.Summary(), t.answer.Summary()
}
