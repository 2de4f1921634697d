package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
	"github.com/floe-broker/floe/tableread"
)

// tableEnv is a log on PostgreSQL + S3 whose early raw files aged out
// into the topic's Iceberg table (a catalog in PostgreSQL, its warehouse
// on S3): partitions [0, rawStart) are in the table only, [rawStart, hw)
// in raw files.
type tableEnv struct {
	meta   metadata.Store
	store  objectstore.Store
	w      *iceberg.Writer
	topic  string
	parts  int32
	values map[int32]map[int64]string // what was produced, by partition and offset
	starts map[int32]int64            // raw log starts after retention
	hws    map[int32]int64
	// produce appends rounds of per records to every partition; age runs
	// the compactor's passes that take the raw records into the table
	// and let their raw files go.
	produce func(rounds, per int)
	age     func()
}

// tableValue is the value of a record: a little JSON of about 200 bytes.
func tableValue(p int32, off int64) string {
	return fmt.Sprintf(`{"p":%d,"o":%d,"pad":"%0180d"}`, p, off, off)
}

// newTableEnv produces rounds of records (several batches and files per
// partition), runs the compactor in process (the table takes them, then
// retention with retention.raw.ms=0 lets their raw files go, at once:
// grace 0), and produces more that stay raw.
func newTableEnv(t *testing.T) *tableEnv {
	t.Helper()
	ctx := context.Background()
	meta := openPostgres(t, testenv.Postgres(t))
	sc := testenv.S3(t)
	c := s3store.DefaultConfig()
	c.Bucket, c.Endpoint, c.Region, c.AccessKey, c.SecretKey, c.PathStyle = sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, true
	s3, err := s3store.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Close() })
	w, _ := icetest.Open(t, icetest.PostgresConfig(t), iceberg.Options{})
	e := &tableEnv{meta: meta, store: s3, w: w, topic: "aged", parts: 2, values: map[int32]map[int64]string{},
		starts: map[int32]int64{}, hws: map[int32]int64{}}
	writer := startOn(t, meta, s3)
	if _, err := writer.CreateTopic(ctx, e.topic, e.parts, map[string]string{"retention.raw.ms": "0", "iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	produce := func(rounds, per int) {
		for range rounds {
			for p := range e.parts {
				var recs []*floev1.Record
				for i := range per {
					r := &floev1.Record{Value: []byte(tableValue(p, e.hws[p]+int64(i))), TimestampMs: time.Now().UnixMilli()}
					if i%3 != 0 {
						r.Key = []byte(fmt.Sprintf("k%d", i))
					}
					if i%4 == 0 {
						r.Headers = []*floev1.Header{{Key: "h", Value: []byte("v")}}
					}
					recs = append(recs, r)
				}
				resp, err := writer.Produce(ctx, e.topic, p, recs...)
				if err != nil {
					t.Fatal(err)
				}
				if e.values[p] == nil {
					e.values[p] = map[int64]string{}
				}
				for i, off := range resp.GetOffsets() {
					e.values[p][off] = string(recs[i].Value)
				}
				e.hws[p] = resp.GetOffsets()[per-1] + 1
			}
		}
	}
	// A table pass per round: several data files.
	comp := tableCompactor(t, meta, s3, w)
	for range 5 {
		produce(1, 25)
		if _, err := comp.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	e.produce = produce
	e.age = func() {
		t.Helper()
		if _, err := comp.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		tp, err := meta.DescribeTopic(ctx, e.topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range tp.PartitionStates {
			e.starts[st.Partition] = st.LogStartOffset
			if st.LogStartOffset != e.hws[st.Partition] {
				t.Fatalf("partition %d: raw log start %d, want %d (the table holds everything)", st.Partition, st.LogStartOffset, e.hws[st.Partition])
			}
		}
		// The raw files of the table's offsets are gone from the store.
		if _, err := comp.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		var left []string
		if err := s3.List(ctx, "v1/files/", func(o objectstore.ObjectInfo) error { left = append(left, o.Key); return nil }); err != nil || len(left) != 0 {
			t.Fatalf("raw files left: %v, %v", left, err)
		}
	}
	produce(1, 25)
	e.age()
	produce(3, 25)
	return e
}

// tableCompactor is a compactor that deletes dead files at once.
func tableCompactor(t *testing.T, meta metadata.Store, store objectstore.Store, w *iceberg.Writer) *compactor.Compactor {
	t.Helper()
	cfg := compactor.DefaultConfig()
	cfg.Owner, cfg.Grace, cfg.MergeSmallBytes, cfg.Iceberg = "test", 0, 0, w
	comp, err := compactor.New(meta, store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return comp
}

// reader starts an agent that serves the table (a fresh one: its read
// index never saw the raw files that went); mut changes the table
// reader's config.
func (e *tableEnv) reader(t *testing.T, mut func(*tableread.Config)) *client.Client {
	t.Helper()
	cfg := tableread.DefaultConfig()
	cfg.MaxBatchBytes = 2048 // several batches a read
	if mut != nil {
		mut(&cfg)
	}
	r, err := tableread.New(e.w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return startKillable(t, e.meta, e.store, groupConfig(), agent.Options{Tables: r}).c
}

// check asserts that got holds every offset of partition p from 0 to its
// high watermark once, in order, with its value.
func (e *tableEnv) check(t *testing.T, how string, p int32, got []*floev1.Record) {
	t.Helper()
	if int64(len(got)) != e.hws[p] {
		t.Fatalf("%s: partition %d: %d records, want %d", how, p, len(got), e.hws[p])
	}
	for i, r := range got {
		if r.GetOffset() != int64(i) || string(r.GetValue()) != e.values[p][int64(i)] {
			t.Fatalf("%s: partition %d: record %d at offset %d = %q, want offset %d %q", how, p, i, r.GetOffset(), r.GetValue(), i, e.values[p][int64(i)])
		}
		if i%25%4 == 0 && len(r.GetHeaders()) != 1 || i%25%3 != 0 && string(r.GetKey()) != fmt.Sprintf("k%d", i%25) {
			t.Fatalf("%s: partition %d offset %d: key %q headers %v", how, p, i, r.GetKey(), r.GetHeaders())
		}
	}
}

// TestReadBelowRawLogStart: a consumer reading from offset 0 of a topic
// whose early raw files are gone gets every record once, in order, across
// the table and the raw files: by Fetch (records and batches), Subscribe
// and a group; ListOffsets earliest is the table's first offset.
func TestReadBelowRawLogStart(t *testing.T) {
	e := newTableEnv(t)
	c := e.reader(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lo, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: e.topic, Spec: floev1.OffsetSpec_OFFSET_SPEC_EARLIEST})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range lo.GetOffsets() {
		if o.GetOffset() != 0 {
			t.Errorf("ListOffsets earliest: partition %d at %d, want 0 (the table's)", o.GetPartition(), o.GetOffset())
		}
	}
	for p := range e.parts {
		for _, batches := range []bool{false, true} {
			var got []*floev1.Record
			for next := int64(0); next < e.hws[p]; {
				var (
					resp *floev1.FetchResponse
					recs []*floev1.Record
				)
				if batches {
					resp, recs, err = c.FetchBatches(ctx, e.topic, p, next, 3000, 0)
				} else {
					resp, err = c.Fetch(ctx, e.topic, p, next, 3000, 0)
					recs = resp.GetRecords()
				}
				if err != nil {
					t.Fatalf("fetch partition %d at %d (batches %v): %v", p, next, batches, err)
				}
				if len(recs) == 0 {
					t.Fatalf("fetch partition %d at %d (batches %v): nothing", p, next, batches)
				}
				if next < e.starts[p] && resp.GetLogStartOffset() != 0 {
					t.Errorf("a read from the table reports log start %d, want 0", resp.GetLogStartOffset())
				}
				got = append(got, recs...)
				next = recs[len(recs)-1].GetOffset() + 1
			}
			e.check(t, fmt.Sprintf("fetch (batches %v)", batches), p, got)
		}
	}
	// Subscribe from earliest, in records and in batches.
	for _, batches := range []bool{false, true} {
		got := map[int32][]*floev1.Record{}
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		err := c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: e.topic, Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}},
			MaxBytes: 4000, Batches: batches}, func(r *floev1.SubscribeResponse) error {
			recs := r.GetRecords()
			if batches {
				var err error
				if recs, err = client.DecodeBatches(r.GetBatches(), r.GetPartition(), int64(len(got[r.GetPartition()])), 0); err != nil {
					return err
				}
			}
			got[r.GetPartition()] = append(got[r.GetPartition()], recs...)
			for p := range e.parts {
				if int64(len(got[p])) < e.hws[p] {
					return nil
				}
			}
			return client.ErrStop
		})
		scancel()
		if err != nil {
			t.Fatalf("subscribe (batches %v): %v", batches, err)
		}
		for p := range e.parts {
			e.check(t, fmt.Sprintf("subscribe (batches %v)", batches), p, got[p])
		}
	}
	// A group starting at earliest.
	g, err := client.NewGroupConsumer([]*client.Client{c}, client.GroupOptions{Group: "from-the-table", Topic: e.topic, Earliest: true, MaxBytes: 4000})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32][]*floev1.Record{}
	for n := int64(0); n < e.hws[0]+e.hws[1]; {
		rec, err := g.Poll(ctx)
		if err != nil {
			t.Fatalf("group poll after %d records: %v", n, err)
		}
		if rec == nil {
			continue // an assignment, no record
		}
		got[rec.GetPartition()] = append(got[rec.GetPartition()], rec)
		n++
	}
	_ = g.Close(ctx)
	for p := range e.parts {
		e.check(t, "group", p, got[p])
	}
}

// TestReadBelowRawLogStartWhileMaintained: reads from the table while
// its small files are rewritten and its snapshots expired, concurrently,
// still give every record once and in order.
func TestReadBelowRawLogStartWhileMaintained(t *testing.T) {
	e := newTableEnv(t)
	// No read-ahead: every read scans the table's files.
	c := e.reader(t, func(c *tableread.Config) { c.ReadaheadBytes = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var maintErr error
	var rewrites int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := e.w.Maintain(ctx, e.topic, iceberg.MaintainOptions{KeepSnapshots: 1,
				Rewrite: &iceberg.RewriteOptions{MinFiles: 1, SmallFileBytes: 1 << 30}})
			if err != nil && !errors.Is(err, context.Canceled) {
				maintErr = err
				return
			}
			if res.Rewrite.FilesRemoved > 0 {
				rewrites++
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for round := range 2 {
		for p := range e.parts {
			var got []*floev1.Record
			for next := int64(0); next < e.hws[p]; {
				resp, err := c.Fetch(ctx, e.topic, p, next, 4000, 0)
				if err != nil {
					t.Fatalf("round %d: fetch partition %d at %d: %v", round, p, next, err)
				}
				if len(resp.GetRecords()) == 0 {
					t.Fatalf("round %d: fetch partition %d at %d: nothing", round, p, next)
				}
				got = append(got, resp.GetRecords()...)
				next = resp.GetNextOffset()
			}
			e.check(t, fmt.Sprintf("round %d", round), p, got)
		}
	}
	close(stop)
	wg.Wait()
	if maintErr != nil {
		t.Fatalf("maintenance: %v", maintErr)
	}
	if rewrites == 0 {
		t.Error("no rewrite ran during the reads")
	}
}

// TestReadBelowRawLogStartCorrupt: a data file of the table that does not
// decode is DataLoss to the reader, never a wrong record.
func TestReadBelowRawLogStartCorrupt(t *testing.T) {
	e := newTableEnv(t)
	c := e.reader(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	icetest.CorruptDataFiles(ctx, t, e.w, e.topic)
	_, err := c.Fetch(ctx, e.topic, 0, 0, 3000, 0)
	if status.Code(err) != codes.DataLoss {
		t.Fatalf("fetch of a corrupt table: %v, want DataLoss", err)
	}
	// The raw part still reads.
	if resp, err := c.Fetch(ctx, e.topic, 0, e.starts[0], 3000, 0); err != nil || len(resp.GetRecords()) == 0 || resp.GetRecords()[0].GetOffset() != e.starts[0] {
		t.Fatalf("fetch of the raw part: %v, %v", resp, err)
	}
}

// TestReadBelowRawLogStartStaleSnapshot: a reader whose table snapshot
// (and the rows it read ahead) predates the one that let retention move
// the raw log start still serves every offset once and in order across
// the boundary: the stale snapshot's silence below the raw log start is
// not a gap (the chaos campaign's skip of 481..506).
func TestReadBelowRawLogStartStaleSnapshot(t *testing.T) {
	e := newTableEnv(t)
	// The reader keeps a loaded snapshot for an hour: only the rule
	// reloads it.
	c := e.reader(t, func(c *tableread.Config) { c.TableTTL = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Partition 0 reads a little from the table (its snapshot, and the
	// rows of both partitions it decoded, are cached) ...
	first, err := c.Fetch(ctx, e.topic, 0, 0, 3000, 0)
	if err != nil || len(first.GetRecords()) == 0 {
		t.Fatalf("first fetch: %v, %v", first, err)
	}
	// ... then the table takes the raw records, retention lets their
	// files go, and more arrive raw.
	before := map[int32]int64{0: e.starts[0], 1: e.starts[1]}
	e.age()
	e.produce(2, 25)
	for p := range e.parts {
		if e.starts[p] <= before[p] {
			t.Fatalf("partition %d: raw log start %d did not move past %d", p, e.starts[p], before[p])
		}
	}
	for p := range e.parts {
		got := []*floev1.Record{}
		next := int64(0)
		if p == 0 {
			got = append(got, first.GetRecords()...)
			next = first.GetNextOffset()
		}
		for next < e.hws[p] {
			resp, err := c.Fetch(ctx, e.topic, p, next, 3000, 0)
			if err != nil {
				t.Fatalf("fetch partition %d at %d: %v", p, next, err)
			}
			if len(resp.GetRecords()) == 0 {
				t.Fatalf("fetch partition %d at %d: nothing", p, next)
			}
			got = append(got, resp.GetRecords()...)
			next = resp.GetNextOffset()
		}
		e.check(t, "fetch across a stale snapshot", p, got)
	}
}
