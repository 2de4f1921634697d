package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// Lag, per group and partition, from the store's one-snapshot inputs
// (metadata.PartitionLagInput) and this agent's samples of committed
// positions (consume rates).

// defaultRetention is a topic's retention without a retention.ms config.
const defaultRetention = 7 * 24 * time.Hour

const (
	// maxLagGroups bounds the groups the tracker samples.
	maxLagGroups = 1000
	// lagSamples bounds the samples kept per partition.
	lagSamples = 16
	// lagScrapeTimeout bounds the store queries of one scrape.
	lagScrapeTimeout = 10 * time.Second
)

// lagRow is one partition's lag and its topic id.
type lagRow struct {
	topicID int64
	pb      *floev1.PartitionLag
}

// groupLag computes the lag of every partition group has a position for.
func (a *Agent) groupLag(ctx context.Context, group string, names *topicNames, now time.Time) ([]lagRow, error) {
	in, err := a.meta.GroupLag(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", err)
	}
	var out []lagRow
	for _, l := range in {
		t, ok, err := names.topic(ctx, l.TopicID)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		l.LogStartOffset = a.lagLogStart(ctx, l.TopicID, l.Partition, l.LogStartOffset, l.Committed) // table.go
		rate := a.grp.lag.sample(group, metadata.TopicPartition{TopicID: l.TopicID, Partition: l.Partition}, l.Committed, now, a.lagWindow())
		out = append(out, lagRow{topicID: l.TopicID, pb: computeLag(t, l, rate, now)})
	}
	return out, nil
}

func (a *Agent) lagWindow() time.Duration {
	if a.cfg.LagSampleWindow > 0 {
		return a.cfg.LagSampleWindow
	}
	return defaultLagSampleWindow
}

// computeLag derives one partition's lag; consumeRate is in records/s.
func computeLag(t metadata.Topic, l metadata.PartitionLagInput, consumeRate float64, now time.Time) *floev1.PartitionLag {
	from := max(l.Committed, l.LogStartOffset)
	pl := &floev1.PartitionLag{
		Topic: t.Name, Partition: l.Partition, Committed: l.Committed,
		HighWatermark: l.HighWatermark, LogStartOffset: l.LogStartOffset,
		LagRecords: max(0, l.HighWatermark-from), LagBytes: l.BytesBehind,
		ConsumeRate: consumeRate, RetentionMs: retentionMs(t), TimeToRetentionMs: -1,
	}
	if pl.LagRecords == 0 {
		return pl
	}
	pl.FirstUnconsumedAppendTimeMs = l.FirstUnconsumedAppendTime
	pl.FirstUnconsumedTimestampMs = l.FirstUnconsumedMaxTimestamp
	nowMs := now.UnixMilli()
	if l.FirstUnconsumedAppendTime > 0 {
		pl.LagMs = max(0, nowMs-l.FirstUnconsumedAppendTime)
	}
	if pl.LagMs > 0 {
		pl.ProduceRate = float64(pl.LagRecords) / (float64(pl.LagMs) / 1000)
	}
	pl.TimeToRetentionMs = timeToRetention(pl.RetentionMs, l.FirstUnconsumedAppendTime, nowMs, consumeRate, pl.ProduceRate)
	return pl
}

// timeToRetention is when retention (retention ms) reaches the consumer's
// position at the current rates: the record at the position was appended
// at appendMs, records after it were appended at produce records/s, and
// the position advances at consume records/s. After t ms the position's
// record was appended at appendMs + t*consume/produce and retention
// deletes what was appended before now + t - retention, so
// t = (appendMs + retention - now) / (1 - consume/produce). -1 means never.
func timeToRetention(retention, appendMs, nowMs int64, consume, produce float64) int64 {
	if retention < 0 || appendMs <= 0 {
		return -1
	}
	slack := appendMs + retention - nowMs
	if slack <= 0 {
		return 0
	}
	if produce <= 0 || consume <= 0 {
		return slack
	}
	if consume >= produce {
		return -1
	}
	t := float64(slack) / (1 - consume/produce)
	if t > math.MaxInt64/2 {
		return -1
	}
	return int64(t)
}

// retentionMs is the topic's retention.ms (-1 infinite), default 7 days,
// read as retention reads it (milliseconds or a duration).
func retentionMs(t metadata.Topic) int64 {
	if r, err := metadata.ParseRetention(t.Config); err == nil {
		return r.Ms
	}
	return defaultRetention.Milliseconds()
}

// lagTracker keeps recent committed positions per group and partition, to
// measure consume rates.
type lagTracker struct {
	mu      sync.Mutex // protects samples
	samples map[string]map[metadata.TopicPartition][]offsetSample
}

type offsetSample struct {
	at     time.Time
	offset int64
}

func newLagTracker() *lagTracker {
	return &lagTracker{samples: make(map[string]map[metadata.TopicPartition][]offsetSample)}
}

// sample records committed at now and returns the consume rate (records/s)
// over the window, 0 until samples a second apart exist.
func (t *lagTracker) sample(group string, tp metadata.TopicPartition, committed int64, now time.Time, window time.Duration) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.samples[group]
	if g == nil {
		if len(t.samples) >= maxLagGroups {
			for k := range t.samples { // evict one, any
				delete(t.samples, k)
				break
			}
		}
		g = make(map[metadata.TopicPartition][]offsetSample)
		t.samples[group] = g
	}
	ss := g[tp]
	// Drop samples out of the window (keep one to measure against) and
	// those from before a reset moved the position back.
	for len(ss) > 1 && now.Sub(ss[1].at) > window {
		ss = ss[1:]
	}
	if len(ss) > 0 && committed < ss[len(ss)-1].offset {
		ss = nil
	}
	if len(ss) == 0 || now.Sub(ss[len(ss)-1].at) >= window/lagSamples {
		if len(ss) == lagSamples {
			ss = ss[1:]
		}
		ss = append(ss, offsetSample{now, committed})
	}
	g[tp] = ss
	if len(ss) == 0 {
		return 0
	}
	first := ss[0]
	dt := now.Sub(first.at).Seconds()
	if dt < 1 {
		return 0
	}
	return float64(committed-first.offset) / dt
}

// keep drops the samples of the groups not in exported (the scrape's):
// the samples kept are bounded by its cap. The groups' own lag answers
// (GroupLag) sample too, bounded by maxLagGroups.
func (t *lagTracker) keep(exported map[string]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for g := range t.samples {
		if !exported[g] {
			delete(t.samples, g)
		}
	}
}

func (t *lagTracker) forget(group string) {
	t.mu.Lock()
	delete(t.samples, group)
	t.mu.Unlock()
}

// lagCollector exports lag per group and topic on each scrape, in a
// constant number of statements whatever the number of groups: one
// ListGroups (members, last rebalance), one TopGroupLag (the
// LagMetricsMaxGroups groups with the most records behind: a thousand
// idle groups do not hide the one that is behind) and one BatchBytes
// (bytes behind, incrementally: lagBytes). Scrapes are serialised, and one
// within lagScrapeMinInterval of the last is answered from it: the sampler
// works at most once per interval however many scrapers there are.
type lagCollector struct {
	a                                        *Agent
	records, bytes, seconds, rate, retention *prometheus.Desc
	rebalance, members                       *prometheus.Desc

	mu   sync.Mutex // protects last and at; held while a scrape runs
	last []prometheus.Metric
	at   time.Time
}

// lagScrapeMinInterval: a scrape this soon after the previous one gets
// its metrics again.
const lagScrapeMinInterval = time.Second

func (g *groups) registerMetrics(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	gt := []string{"group", "topic"}
	c := &lagCollector{a: g.a,
		records:   prometheus.NewDesc("floe_group_lag_records", "Records between the group's committed positions and the high watermarks, summed over the topic's partitions.", gt, nil),
		bytes:     prometheus.NewDesc("floe_group_lag_bytes", "Bytes of the batches not yet consumed by the group, summed over the topic's partitions.", gt, nil),
		seconds:   prometheus.NewDesc("floe_group_lag_seconds", "Age by append time of the oldest record the group has not consumed (max over the topic's partitions).", gt, nil),
		rate:      prometheus.NewDesc("floe_group_consume_rate", "Records per second committed by the group (sum over the topic's partitions, measured between scrapes).", gt, nil),
		retention: prometheus.NewDesc("floe_group_time_to_retention_seconds", "Time until retention reaches the group's position at current rates (min over the topic's partitions; absent when never).", gt, nil),
		rebalance: prometheus.NewDesc("floe_group_last_rebalance_seconds", "Duration of the group's last rebalance.", []string{"group"}, nil),
		members:   prometheus.NewDesc("floe_group_members", "Live members of the group.", []string{"group"}, nil),
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err)
		}
	}
}

// Describe implements prometheus.Collector.
func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.records, c.bytes, c.seconds, c.rate, c.retention, c.rebalance, c.members} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= lagScrapeMinInterval {
		c.last, c.at = c.collect(), time.Now()
	}
	for _, m := range c.last {
		ch <- m
	}
}

// collect runs one scrape.
func (c *lagCollector) collect() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), lagScrapeTimeout)
	defer cancel()
	a, limit := c.a, c.a.cfg.lagMetricsMaxGroups()
	var out []prometheus.Metric
	gs, err := a.meta.ListGroups(ctx)
	if err != nil {
		a.log.Warn("lag metrics: list groups", "err", err)
		return nil
	}
	top, err := a.meta.TopGroupLag(ctx, limit)
	if err != nil {
		a.log.Warn("lag metrics: top group lag", "err", err)
		return nil
	}
	now := time.Now()
	if err := a.grp.bytes.fill(ctx, a.meta, top, now); err != nil {
		a.log.Warn("lag metrics: bytes behind", "err", err)
		return nil
	}
	// Members and rebalance of the groups exported and of the groups with
	// live members, up to the cap together.
	exported := make(map[string]bool, len(top))
	for _, g := range top {
		exported[g.Group] = true
	}
	n := len(top)
	for _, g := range gs {
		if !exported[g.Group] && (g.Members == 0 || n >= limit) {
			continue
		}
		if !exported[g.Group] {
			n++
		}
		out = append(out, prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(g.Members), g.Group),
			prometheus.MustNewConstMetric(c.rebalance, prometheus.GaugeValue, g.LastRebalanceDuration.Seconds(), g.Group))
	}
	names := newTopicNames(a.meta)
	a.grp.lag.keep(exported)
	for _, g := range top {
		type agg struct {
			records, bytes int64
			secs, rate     float64
			ttr            int64
		}
		by := map[string]*agg{}
		var order []string
		for _, l := range g.Partitions {
			t, ok, err := names.topic(ctx, l.TopicID)
			if err != nil {
				a.log.Warn("lag metrics: topic", "group", g.Group, "err", err)
				return out
			}
			if !ok {
				continue
			}
			l.LogStartOffset = a.lagLogStart(ctx, l.TopicID, l.Partition, l.LogStartOffset, l.Committed) // table.go
			rate := a.grp.lag.sample(g.Group, metadata.TopicPartition{TopicID: l.TopicID, Partition: l.Partition}, l.Committed, now, a.lagWindow())
			pl := computeLag(t, l, rate, now)
			x := by[pl.Topic]
			if x == nil {
				x = &agg{ttr: -1}
				by[pl.Topic] = x
				order = append(order, pl.Topic)
			}
			x.records += pl.LagRecords
			x.bytes += pl.LagBytes
			x.secs = max(x.secs, float64(pl.LagMs)/1000)
			x.rate += pl.ConsumeRate
			if t := pl.TimeToRetentionMs; t >= 0 && (x.ttr < 0 || t < x.ttr) {
				x.ttr = t
			}
		}
		for _, topic := range order {
			x := by[topic]
			out = append(out,
				prometheus.MustNewConstMetric(c.records, prometheus.GaugeValue, float64(x.records), g.Group, topic),
				prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(x.bytes), g.Group, topic),
				prometheus.MustNewConstMetric(c.seconds, prometheus.GaugeValue, x.secs, g.Group, topic),
				prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, x.rate, g.Group, topic))
			if x.ttr >= 0 {
				out = append(out, prometheus.MustNewConstMetric(c.retention, prometheus.GaugeValue, float64(x.ttr)/1000, g.Group, topic))
			}
		}
	}
	return out
}
