//go:build engines

package engines

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/kbatch"
)

// Topics of the suite; mappedTopic's table name needs the mapping of
// docs/iceberg.md ("Table names").
const (
	eventsTopic = "events"
	keyedTopic  = "keyed"
	mappedTopic = "Orders.v2-EU"
	typedTopic  = "typed"
	liveTopic   = "live"
)

// matrix records engine × check outcomes, printed at the end.
type matrix struct {
	mu  sync.Mutex // protects res
	res map[string]map[string]string
}

func (m *matrix) set(engine, check string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.res[engine] == nil {
		m.res[engine] = map[string]string{}
	}
	if ok {
		m.res[engine][check] = "pass"
	} else {
		m.res[engine][check] = "FAIL"
	}
}

func (m *matrix) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, e := range slices.Sorted(func(yield func(string) bool) {
		for k := range m.res {
			if !yield(k) {
				return
			}
		}
	}) {
		var cs []string
		for c, r := range m.res[e] {
			cs = append(cs, c+"="+r)
		}
		sort.Strings(cs)
		fmt.Fprintf(&b, "%-18s %s\n", e, strings.Join(cs, " "))
	}
	return b.String()
}

// fixture is the cluster after the dataset was produced and every table
// caught up.
type fixture struct {
	c         *cluster
	ds        *dataset
	tables    []string // the dataset's tables, sorted
	allTables []string // and the live table, sorted
	events    string   // the table with several snapshots and days
	snapIDs   []int64  // events' snapshot ids, as the first engine read them
	snapOnce  sync.Once
	m         *matrix
}

func TestEngines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	suiteStart := time.Now()
	c := startCluster(t, ctx)
	// The compactor starts before any table exists, and before Trino: the
	// catalog's tables are there for the engines from then on.
	c.startCompactor(t, ctx)
	// Trino starts while the data is produced (it takes a minute).
	var tr *trino
	var trErr error
	trReady := make(chan struct{})
	go func() {
		defer close(trReady)
		tr, trErr = startTrino(ctx, c)
	}()
	t.Cleanup(func() {
		<-trReady
		if tr != nil {
			tr.stop()
		}
	})

	f := &fixture{c: c, ds: newDataset(), m: &matrix{res: map[string]map[string]string{}}}
	f.produceAll(t, ctx)
	t.Logf("cluster up and dataset produced in %v", time.Since(suiteStart).Round(time.Millisecond))

	t.Run("pyiceberg", func(t *testing.T) { f.pyiceberg(t, ctx) })
	t.Run("duckdb", func(t *testing.T) { f.duckdb(t, ctx) })
	t.Run("spark", func(t *testing.T) { f.spark(t, ctx) })
	t.Run("trino", func(t *testing.T) {
		select {
		case <-trReady:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		if trErr != nil {
			if os.Getenv("CI") != "true" && strings.Contains(trErr.Error(), "not installed") {
				t.Skip(trErr)
			}
			t.Fatal(trErr)
		}
		f.trino(t, ctx, tr)
	})
	t.Logf("engine × check (%v):\n%s", time.Since(suiteStart).Round(time.Second), f.m)
}

// produceAll creates the topics, produces the dataset and waits until
// every table holds it.
func (f *fixture) produceAll(t *testing.T, ctx context.Context) {
	c, ds := f.c, f.ds
	rng := rand.New(rand.NewPCG(19, 19))
	for _, tp := range []struct {
		name  string
		parts int32
		cfg   map[string]string
	}{
		{eventsTopic, 3, map[string]string{"iceberg.lag": "0"}},
		{keyedTopic, 2, map[string]string{"iceberg.lag": "0", "cleanup.policy": "compact"}},
		{mappedTopic, 2, map[string]string{"iceberg.lag": "0"}},
		// The typed topic's first values must reach the table only once
		// it has a schema (so that those the schema refuses are rejected).
		{typedTopic, 2, map[string]string{"iceberg.lag": "1h"}},
		{liveTopic, 2, map[string]string{"iceberg.lag": "0"}},
	} {
		if _, err := c.client.CreateTopic(ctx, tp.name, tp.parts, tp.cfg); err != nil {
			t.Fatalf("create %s: %v", tp.name, err)
		}
	}
	events := iceberg.TableName(eventsTopic)
	f.events = events
	n := 0
	for round := range 2 {
		for p := range int32(3) {
			recs := ds.rawRecords(rng, 25, n)
			n += len(recs)
			ds.produce(t, ctx, c, eventsTopic, events, p, recs, nil)
		}
		if round == 0 {
			// A first snapshot, then more appends: time travel has an
			// older snapshot to go to.
			c.waitTables(t, ctx, eventsTopic)
		}
	}
	for p := range int32(2) {
		var recs []kbatch.Record
		for i := range 30 {
			r := kbatch.Record{Timestamp: ds.stamp(i), Key: []byte(fmt.Sprintf("k%d", i%5))}
			if i%4 != 3 {
				r.Value = []byte(fmt.Sprintf("v%d-%d", p, i))
			}
			recs = append(recs, r)
		}
		ds.produce(t, ctx, c, keyedTopic, iceberg.TableName(keyedTopic), p, recs, nil)
		ds.produce(t, ctx, c, mappedTopic, iceberg.TableName(mappedTopic), p, ds.rawRecords(rng, 12, 100*int(p)), nil)
	}

	// The typed topic: values from before the schema (some the schema
	// refuses: they go to the rejected table), values of v1, then v2.
	typed, rejected := iceberg.TableName(typedTopic), iceberg.RejectedTableName(typedTopic)
	v2 := typedFields(schemaV2) // v1 values read v2's added fields as null
	var recs []kbatch.Record
	for i := range 4 {
		recs = append(recs, kbatch.Record{Timestamp: ds.stamp(i), Key: []byte{byte(i)}, Value: typedValue(i, false)})
	}
	recs = append(recs, kbatch.Record{Timestamp: ds.stamp(4)}) // a tombstone: no fields, not rejected
	ds.produce(t, ctx, c, typedTopic, typed, 0, recs, v2)
	bad := []kbatch.Record{
		{Timestamp: ds.stamp(5), Value: []byte("not json")},
		{Timestamp: ds.stamp(6), Value: []byte(`{"id":"seven"}`)},
		{Timestamp: ds.stamp(7), Value: []byte(`{"price":1.5}`)},
		{Timestamp: ds.stamp(8), Value: []byte{}},
	}
	ds.produce(t, ctx, c, typedTopic, typed, 1, bad, func([]byte) any { return nil })
	for _, r := range ds.tables[typed][len(ds.tables[typed])-len(bad):] {
		ds.reject(rejected, r)
	}
	ds.topics[rejected] = typedTopic
	f.alter(t, ctx, typedTopic, map[string]string{"value.schema": schemaV1})
	for p := range int32(2) {
		recs = recs[:0]
		for i := range 6 {
			j := 10 + 10*int(p) + i
			recs = append(recs, kbatch.Record{Timestamp: ds.stamp(j), Key: []byte(fmt.Sprint(j)), Value: typedValue(j, false),
				Headers: []kbatch.Header{{Key: "v", Value: []byte("1")}}})
		}
		ds.produce(t, ctx, c, typedTopic, typed, p, recs, v2)
	}
	f.alter(t, ctx, typedTopic, map[string]string{"iceberg.lag": "0"})
	c.waitTables(t, ctx, typedTopic)
	// The evolution: the table gets v2's fields in a later snapshot.
	f.alter(t, ctx, typedTopic, map[string]string{"value.schema": schemaV2})
	time.Sleep(6 * time.Second) // past the agents' topic cache TTL (5 s), which checks produce
	for p := range int32(2) {
		recs = recs[:0]
		for i := range 6 {
			j := 40 + 10*int(p) + i
			recs = append(recs, kbatch.Record{Timestamp: ds.stamp(j), Value: typedValue(j, i%2 == 0)})
		}
		ds.produce(t, ctx, c, typedTopic, typed, p, recs, v2)
	}
	c.waitTables(t, ctx, eventsTopic, keyedTopic, mappedTopic, typedTopic)
	// A deleted topic's table is kept (-iceberg-drop-deleted-topics is
	// off): the engines read it like the others.
	if _, err := c.client.Topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: mappedTopic}); err != nil {
		t.Fatalf("delete %s: %v", mappedTopic, err)
	}
	// The live table (Spark's query during appends) starts with a row.
	ds.produce(t, ctx, c, liveTopic, "", 0, ds.rawRecords(rng, 1, 0), nil)
	c.waitTables(t, ctx, liveTopic)
	delete(ds.tables, "")
	for name := range ds.tables {
		f.tables = append(f.tables, name)
	}
	sort.Strings(f.tables)
	f.allTables = append(slices.Clone(f.tables), iceberg.TableName(liveTopic))
	sort.Strings(f.allTables)
}

func (f *fixture) alter(t *testing.T, ctx context.Context, topic string, set map[string]string) {
	t.Helper()
	if _, err := f.c.client.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: topic, Set: set}); err != nil {
		t.Fatalf("alter %s %v: %v", topic, set, err)
	}
}

// dayFilter is the one-day window the engines filter on: the dataset's
// second day.
func (f *fixture) dayFilter() map[string]any {
	from := f.ds.days[1]
	return map[string]any{"table": f.events, "from_us": from.UnixMicro(), "to_us": from.AddDate(0, 0, 1).UnixMicro()}
}

// check compares an engine's answer with the dataset, recording each
// check in the matrix.
func (f *fixture) check(t *testing.T, engine string, a answer, wantTables []string) {
	t.Helper()
	m := f.m
	if a.Namespaces != nil {
		ok := slices.Contains(a.Namespaces, namespace)
		if !ok {
			t.Errorf("%s: namespaces %v, want %q among them", engine, a.Namespaces, namespace)
		}
		m.set(engine, "schemas", ok)
	}
	if a.Tables != nil {
		ok := slices.Equal(a.Tables, wantTables)
		if !ok {
			t.Errorf("%s: tables %v, want %v", engine, a.Tables, wantTables)
		}
		m.set(engine, "tables", ok)
	}
	if a.RestRows != nil {
		all := true
		for _, name := range f.tables {
			all = compareRows(t, engine+" rest "+name, a.RestRows[name], f.ds.tables[name]) && all
		}
		m.set(engine, "rest-rows", all)
	}
	if a.Rows != nil {
		all := true
		for _, name := range f.tables {
			got, ok := a.Rows[name]
			if !ok {
				t.Errorf("%s: no rows of table %s", engine, name)
				all = false
				continue
			}
			all = compareRows(t, engine+" "+name, got, f.ds.tables[name]) && all
		}
		m.set(engine, "rows", all)
	}
	for name, got := range a.Vectorized {
		m.set(engine, "rows-vectorized", compareRows(t, engine+" vectorized "+name, got, flat(f.ds.tables[name])))
	}
	want := dayCounts(f.ds.tables[f.events])
	if a.DayCounts != nil {
		ok := fmt.Sprint(a.DayCounts) == fmt.Sprint(want) && len(want) == len(f.ds.days)
		if !ok {
			t.Errorf("%s: count per day %v, want %v", engine, a.DayCounts, want)
		}
		m.set(engine, "count-per-day", ok)
	}
	if a.Filter != nil {
		day := f.ds.days[1].Format("2006-01-02")
		ok := a.Filter.Count == want[day]
		if !ok {
			t.Errorf("%s: one-day filter: %d rows, want %d", engine, a.Filter.Count, want[day])
		}
		if a.Filter.FilesTotal > 0 {
			pruned := a.Filter.FilesRead < a.Filter.FilesTotal && a.Filter.FilesRead > 0
			if !pruned {
				t.Errorf("%s: one-day filter reads %d files of %d: not pruned", engine, a.Filter.FilesRead, a.Filter.FilesTotal)
			}
			m.set(engine, "day-pruning", pruned)
		}
		m.set(engine, "day-filter", ok)
	}
	if a.Snapshots != nil {
		f.checkSnapshots(t, engine, a)
	}
}

// checkSnapshots: the events table has several snapshots; reading each
// (time travel) gives its summary's total-records, the last one every
// row; every engine sees the same snapshots.
func (f *fixture) checkSnapshots(t *testing.T, engine string, a answer) {
	t.Helper()
	ok := len(a.Snapshots) >= 2
	if !ok {
		t.Errorf("%s: %d snapshots of %s, want 2 or more", engine, len(a.Snapshots), f.events)
	}
	var ids []int64
	for i, s := range a.Snapshots {
		ids = append(ids, s.ID)
		if s.TotalRecords > 0 && s.Count != s.TotalRecords {
			t.Errorf("%s: snapshot %d: %d rows read, summary total-records %d", engine, s.ID, s.Count, s.TotalRecords)
			ok = false
		}
		if i == len(a.Snapshots)-1 && s.Count != int64(len(f.ds.tables[f.events])) {
			t.Errorf("%s: last snapshot %d: %d rows, want %d", engine, s.ID, s.Count, len(f.ds.tables[f.events]))
			ok = false
		}
		if i > 0 && s.Count <= a.Snapshots[0].Count && s.Operation == "append" {
			t.Errorf("%s: snapshot %d: %d rows, the first has %d", engine, s.ID, s.Count, a.Snapshots[0].Count)
			ok = false
		}
	}
	m := f.m
	m.set(engine, "time-travel", ok)
	f.snapOnce.Do(func() { f.snapIDs = ids })
	same := slices.Equal(ids, f.snapIDs)
	if !same {
		t.Errorf("%s: snapshots %v, another engine saw %v", engine, ids, f.snapIDs)
	}
	m.set(engine, "snapshots", same)
	if a.History != nil {
		h := slices.Equal(a.History, ids)
		if !h {
			t.Errorf("%s: history %v, snapshots %v", engine, a.History, ids)
		}
		m.set(engine, "history", h)
	}
}
