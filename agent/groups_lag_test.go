package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/objectstore"
)

// DescribeGroup's lag equals what the log says: records and bytes behind
// (every batch here is one identical record, so bytes are records times
// one batch's size), the append time and event time of the first
// unconsumed record, the consume rate between two describes, the time
// left until retention; the Prometheus gauges agree.
func TestGroupLagMatchesLog(t *testing.T) {
	for name, open := range groupBackends(t) {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			n := startKillable(t, open(t), objectstore.NewMemory(), groupConfig(), agent.Options{Registry: reg})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const retention = int64(time.Hour / time.Millisecond)
			if _, err := n.c.CreateTopic(ctx, "t", 1, map[string]string{"retention.ms": "3600000"}); err != nil {
				t.Fatal(err)
			}
			const total = 20
			appended := make([]int64, total)
			for i := range total {
				r, err := n.c.Produce(ctx, "t", 0, &floev1.Record{Value: []byte("0123456789"), TimestampMs: 5000 + int64(i)})
				if err != nil {
					t.Fatal(err)
				}
				appended[i] = r.GetLogAppendTimeMs()
			}
			g := n.c.Groups()
			commit := func(off int64) {
				if _, err := g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g",
					Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: off}}}); err != nil {
					t.Fatal(err)
				}
			}
			describe := func() *floev1.PartitionLag {
				d, err := g.DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "g"})
				if err != nil {
					t.Fatal(err)
				}
				if len(d.GetPartitions()) != 1 {
					t.Fatalf("partitions %v", d.GetPartitions())
				}
				return d.GetPartitions()[0]
			}
			commit(total - 1)
			one := describe().GetLagBytes()
			if one <= 10 {
				t.Fatalf("one batch behind: %d bytes", one)
			}
			commit(5)
			described1 := time.Now()
			before := described1.UnixMilli()
			l := describe()
			answered1 := time.Now()
			after := answered1.UnixMilli()
			if l.GetLagRecords() != total-5 || l.GetHighWatermark() != total || l.GetCommitted() != 5 {
				t.Fatalf("lag %d records (hw %d, committed %d), want %d", l.GetLagRecords(), l.GetHighWatermark(), l.GetCommitted(), total-5)
			}
			if l.GetLagBytes() != (total-5)*one {
				t.Fatalf("lag %d bytes, want %d", l.GetLagBytes(), (total-5)*one)
			}
			if l.GetFirstUnconsumedAppendTimeMs() != appended[5] || l.GetFirstUnconsumedTimestampMs() != 5005 {
				t.Fatalf("first unconsumed appended at %d with timestamp %d, want %d and 5005",
					l.GetFirstUnconsumedAppendTimeMs(), l.GetFirstUnconsumedTimestampMs(), appended[5])
			}
			if l.GetLagMs() < before-appended[5] || l.GetLagMs() > after-appended[5] {
				t.Fatalf("lag %d ms, want between %d and %d", l.GetLagMs(), before-appended[5], after-appended[5])
			}
			// No consume rate yet: retention reaches the position when the
			// first unconsumed record is an hour old.
			if want := appended[5] + retention - before; l.GetRetentionMs() != retention || l.GetTimeToRetentionMs() > want || l.GetTimeToRetentionMs() < want-(after-before)-1 {
				t.Fatalf("time to retention %d ms (retention %d), want about %d", l.GetTimeToRetentionMs(), l.GetRetentionMs(), want)
			}
			time.Sleep(1200 * time.Millisecond)
			commit(15)
			described2 := time.Now()
			l = describe()
			answered2 := time.Now()
			// 10 records between the two describes (the rate is sampled when
			// a describe reads the committed positions), however long the
			// machine took over them: the rate is within what the measured
			// times allow — at least from the first describe's answer to the
			// second's request, at most from the first's request to the
			// second's answer.
			longest, shortest := answered2.Sub(described1), described2.Sub(answered1)
			if r := l.GetConsumeRate(); r < 10/longest.Seconds() || r > 10/shortest.Seconds() {
				t.Fatalf("consume rate %.2f/s, want between %.2f and %.2f (10 records in %v to %v)", r, 10/longest.Seconds(), 10/shortest.Seconds(), shortest, longest)
			}
			// The gauges of the scrape.
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					if labels(m)["group"] == "g" {
						got[mf.GetName()] = m.GetGauge().GetValue()
					}
				}
			}
			if got["floe_group_lag_records"] != total-15 || got["floe_group_lag_bytes"] != float64((total-15)*one) || got["floe_group_members"] != 0 {
				t.Fatalf("gauges %v", got)
			}
			// The consumer now goes faster than the records behind it were
			// appended: retention never catches it, and no gauge says when.
			if l.GetConsumeRate() > l.GetProduceRate() && l.GetTimeToRetentionMs() != -1 {
				t.Fatalf("time to retention %d ms while consuming at %.1f/s > %.1f/s", l.GetTimeToRetentionMs(), l.GetConsumeRate(), l.GetProduceRate())
			}
			if v, ok := got["floe_group_time_to_retention_seconds"]; ok {
				t.Fatalf("time to retention gauge %v while the consumer keeps up", v)
			}
		})
	}
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
