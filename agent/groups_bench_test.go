package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
)

// BenchmarkGroupRPCPostgres measures a stable member's Heartbeat and a
// CommitOffsets of one partition through the gRPC API of an agent on
// PostgreSQL, reporting p50 and p99 of each.
func BenchmarkGroupRPCPostgres(b *testing.B) {
	ctx := context.Background()
	meta, err := postgres.Open(ctx, testenv.Postgres(b), postgres.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { meta.Close() })
	n := startKillable(b, meta, objectstore.NewMemory(), groupConfig())
	if _, err := n.c.CreateTopic(ctx, "bench", 4, nil); err != nil {
		b.Fatal(err)
	}
	g := n.c.Groups()
	r, err := g.Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "g", Subscription: []string{"bench"}})
	if err != nil {
		b.Fatal(err)
	}
	var hb, cm []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if r, err = g.Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "g", MemberId: r.GetMemberId(),
			MemberEpoch: r.GetMemberEpoch(), Owned: r.GetAssigned()}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := g.CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g", MemberId: r.GetMemberId(), MemberEpoch: r.GetMemberEpoch(),
			Offsets: []*floev1.OffsetCommit{{Topic: "bench", Partition: 0, Offset: int64(i)}}}); err != nil {
			b.Fatal(err)
		}
		hb, cm = append(hb, t1.Sub(t0)), append(cm, time.Since(t1))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"heartbeat", hb}, {"commit", cm}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds()), m.name+"-p99-µs")
	}
}
