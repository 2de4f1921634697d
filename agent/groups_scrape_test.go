package agent_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
)

// stmtCounter counts the statements a PostgreSQL store sends (those of
// batches one by one), while on.
type stmtCounter struct {
	on, n atomic.Int64
}

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if c.on.Load() == 1 {
		c.n.Add(1)
	}
	return ctx
}
func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *stmtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *stmtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	if c.on.Load() == 1 {
		c.n.Add(1)
	}
}
func (c *stmtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// scrape gathers reg once and returns the floe_group_* series by name and
// their count.
func scrape(t *testing.T, reg *prometheus.Registry) (map[string]map[string]float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out, n := map[string]map[string]float64{}, 0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "floe_group_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := labels(m)
			k := l["group"] + "/" + l["topic"]
			if out[k] == nil {
				out[k] = map[string]float64{}
			}
			out[k][mf.GetName()] = m.GetGauge().GetValue()
			n++
		}
	}
	return out, n
}

// TestGroupLagScrapeStatements: one lag scrape on PostgreSQL takes a
// constant number of statements whatever the number of groups (it took
// a few per group), and exports the groups with the most lag, up to the
// cap: 1,000 member-less, caught-up groups do not hide one created after
// them that is behind. FLOE_SCRAPE_GROUPS (default 1000) sets the number.
func TestGroupLagScrapeStatements(t *testing.T) {
	groups := 1000
	if v := os.Getenv("FLOE_SCRAPE_GROUPS"); v != "" {
		var err error
		if groups, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	dsn := testenv.Postgres(t)
	ctr := &stmtCounter{}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	opts := postgres.DefaultOptions()
	opts.Tracer = ctr
	meta, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	reg := prometheus.NewRegistry()
	n := startKillable(t, meta, objectstore.NewMemory(), groupConfig(), agent.Options{Registry: reg})
	const topics = 5
	var ids []int64
	for i := range topics {
		tp, err := n.c.CreateTopic(ctx, fmt.Sprintf("t%d", i), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tp.GetId())
	}
	// Three records in t0, then the idle groups, caught up on every
	// topic, in bulk.
	if _, err := n.c.Produce(ctx, "t0", 0, &floev1.Record{Value: []byte("a")}, &floev1.Record{Value: []byte("b")}, &floev1.Record{Value: []byte("c")}); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO consumer_groups (name) SELECT 'idle-' || lpad(i::text, 6, '0') FROM generate_series(1, $1) i`, groups); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO group_offsets (group_name, topic_id, partition, committed_offset, metadata, commit_time)
		SELECT g.name, p.topic_id, 0, p.high_watermark, '', 0 FROM consumer_groups g, partitions p
		WHERE p.topic_id = ANY ($1)`, ids); err != nil {
		t.Fatal(err)
	}
	// One group, last by name, is behind on t0.
	if err := meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "zz-late",
		Offsets: []metadata.OffsetCommit{{TopicID: ids[0], Partition: 0, Offset: 1}}}); err != nil {
		t.Fatal(err)
	}
	ctr.on.Store(1)
	series, count := scrape(t, reg)
	ctr.on.Store(0)
	t.Logf("%d groups: %d statements in one lag scrape, %d floe_group_* series", groups+1, ctr.n.Load(), count)
	if v := series["zz-late/t0"]["floe_group_lag_records"]; v != 2 {
		t.Errorf("the group behind is not exported right: %v", series["zz-late/t0"])
	}
	if max := 20; ctr.n.Load() > int64(max) {
		t.Errorf("%d statements for one scrape of %d groups, want at most %d", ctr.n.Load(), groups+1, max)
	}
	if limit := agent.DefaultConfig().LagMetricsMaxGroups; count > limit*(5*topics+2) {
		t.Errorf("%d series, over %d groups' worth", count, limit)
	}
}
