package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kbatch"
)

// killedCompactor is a `floe compactor` process the test SIGKILLs.
type killedCompactor struct {
	cmd  *exec.Cmd
	mu   *sync.Mutex // protects logs
	logs *strings.Builder
	done chan struct{}
}

// spawnCompactor starts `floe compactor` without waiting for it to be
// healthy: a kill may land while it opens its stores.
func spawnCompactor(t *testing.T, args ...string) *killedCompactor {
	t.Helper()
	k := &killedCompactor{mu: &sync.Mutex{}, logs: &strings.Builder{}, done: make(chan struct{})}
	k.cmd = exec.Command(floeBin, append([]string{"compactor", "-metrics-listen", "127.0.0.1:0"}, args...)...)
	k.cmd.Stdout, k.cmd.Stderr = lockedWriter{k.mu, k.logs}, lockedWriter{k.mu, k.logs}
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.cmd.Wait(); close(k.done) }()
	t.Cleanup(func() { _ = k.cmd.Process.Kill(); <-k.done })
	return k
}

func (k *killedCompactor) text() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.logs.String()
}

// exited reports whether the process ended on its own (a crash).
func (k *killedCompactor) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the process and waits for it.
func (k *killedCompactor) kill() {
	_ = k.cmd.Process.Signal(syscall.SIGKILL)
	<-k.done
}

// killRecord is what the test produced at one offset.
type killRecord struct {
	row   iceberg.Row
	id    int64 // the value's "id" when it conforms to the value schema, else -1
	name  string
	wantR bool // lands in the rejected table
}

// killProduce sends recs to partition p of topic and records each one
// at the offset it was given.
func killProduce(t *testing.T, c *client.Client, topic string, p int32, recs []*floev1.Record, want map[int32]map[int64]killRecord, meta []killRecord) {
	t.Helper()
	resp, err := c.Produce(context.Background(), topic, p, recs...)
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
	if want[p] == nil {
		want[p] = map[int64]killRecord{}
	}
	for i, r := range recs {
		off := resp.GetOffsets()[i]
		kr := meta[i]
		kr.row = iceberg.Row{Partition: p, Offset: off, Timestamp: time.UnixMilli(r.GetTimestampMs()).UTC(),
			AppendTime: time.UnixMilli(resp.GetLogAppendTimeMs()).UTC(), Key: r.Key}
		if !r.GetNullValue() {
			kr.row.Value = r.GetValue()
			if kr.row.Value == nil {
				kr.row.Value = []byte{}
			}
		}
		for _, h := range r.GetHeaders() {
			kr.row.Headers = append(kr.row.Headers, kbatch.Header{Key: h.GetKey(), Value: h.GetValue()})
		}
		if _, dup := want[p][off]; dup {
			t.Fatalf("produce to %s/%d: offset %d given twice", topic, p, off)
		}
		want[p][off] = kr
	}
}

// killRecords makes n records of round: keys (some null), headers (some
// none), values (some null, some empty), timestamps up to three days old.
func killRecords(rng *rand.Rand, round, n int) []*floev1.Record {
	recs := make([]*floev1.Record, n)
	for i := range recs {
		r := &floev1.Record{TimestampMs: time.Now().Add(-time.Duration(rng.IntN(3*24)) * time.Hour).UnixMilli()}
		if rng.IntN(4) != 0 {
			r.Key = []byte(fmt.Sprintf("k%d-%d", round, i))
		}
		switch rng.IntN(8) {
		case 0:
			r.NullValue = true
		case 1:
			r.Value = []byte{}
		default:
			r.Value = []byte(fmt.Sprintf("round %d record %d %s", round, i, strings.Repeat("v", rng.IntN(200))))
		}
		for h := range rng.IntN(3) {
			r.Headers = append(r.Headers, &floev1.Header{Key: fmt.Sprintf("h%d", h), Value: []byte(fmt.Sprintf("%d/%d", round, i))})
		}
		recs[i] = r
	}
	return recs
}

// checkKillRows compares a table's rows with what was produced: every
// offset exactly once, every column equal. It returns the problems.
func checkKillRows(want map[int32]map[int64]killRecord, got []iceberg.Row) []string {
	var bad []string
	seen := map[[2]int64]int{}
	for _, r := range got {
		k := [2]int64{int64(r.Partition), r.Offset}
		seen[k]++
		if seen[k] == 2 {
			bad = append(bad, fmt.Sprintf("partition %d offset %d: more than once in the table", r.Partition, r.Offset))
		}
		w, ok := want[r.Partition][r.Offset]
		if !ok {
			bad = append(bad, fmt.Sprintf("partition %d offset %d: in the table, never produced", r.Partition, r.Offset))
			continue
		}
		if d := rowDiff(w.row, r); d != "" {
			bad = append(bad, fmt.Sprintf("partition %d offset %d: %s", r.Partition, r.Offset, d))
		}
	}
	for p, offs := range want {
		for off := range offs {
			if seen[[2]int64{int64(p), off}] == 0 {
				bad = append(bad, fmt.Sprintf("partition %d offset %d: produced, missing from the table", p, off))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// rowDiff says how got differs from want ("" when equal).
func rowDiff(want, got iceberg.Row) string {
	sameBytes := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	switch {
	case !got.Timestamp.Equal(want.Timestamp):
		return fmt.Sprintf("timestamp %v, want %v", got.Timestamp, want.Timestamp)
	case !got.AppendTime.Equal(want.AppendTime):
		return fmt.Sprintf("append time %v, want %v", got.AppendTime, want.AppendTime)
	case !sameBytes(got.Key, want.Key):
		return fmt.Sprintf("key %q (null %v), want %q (null %v)", got.Key, got.Key == nil, want.Key, want.Key == nil)
	case !sameBytes(got.Value, want.Value):
		return fmt.Sprintf("value %q (null %v), want %q (null %v)", got.Value, got.Value == nil, want.Value, want.Value == nil)
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers)
	}
	for i, h := range want.Headers {
		if got.Headers[i].Key != h.Key || !bytes.Equal(got.Headers[i].Value, h.Value) {
			return fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers)
		}
	}
	return ""
}

// killColumns reads columns of tbl (a top-level column, or a struct's
// field as "value_fields.id") as JSON, one entry per row, with the row's
// partition and offset, so that duplicates show.
func killColumns(t *testing.T, tbl *table.Table, cols ...string) []map[string]string {
	t.Helper()
	scan := tbl.Scan()
	defer scan.Close()
	_, batches, err := scan.ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rec, err := range batches {
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]string{}
			for _, c := range append([]string{iceberg.ColPartition, iceberg.ColOffset}, cols...) {
				path := strings.Split(c, ".")
				idx := rec.Schema().FieldIndices(path[0])
				if len(idx) != 1 {
					t.Fatalf("table %v: no column %s", tbl.Identifier(), path[0])
				}
				a := rec.Column(idx[0])
				for _, name := range path[1:] {
					st := a.(*array.Struct)
					if st.IsNull(i) {
						a = nil
						break
					}
					k, _ := st.DataType().(*arrow.StructType).FieldIdx(name)
					a = st.Field(k)
				}
				var v any
				if a != nil && !a.IsNull(i) {
					v = a.GetOneForMarshal(i)
				}
				b, _ := json.Marshal(v)
				row[c] = string(b)
			}
			out = append(out, row)
		}
		rec.Release()
	}
	return out
}

// maintainStats counts what compactors logged.
type maintainStats struct {
	Appends, Maintained, Rewritten, ExpiredSnapshots, Orphans int
}

// add counts the log lines of one compactor.
func (s *maintainStats) add(logs string) {
	field := func(line, name string) int {
		_, rest, ok := strings.Cut(line, " "+name+"=")
		if !ok {
			return 0
		}
		v, _, _ := strings.Cut(rest, " ")
		n, _ := strconv.Atoi(v)
		return n
	}
	for _, line := range strings.Split(logs, "\n") {
		switch {
		case strings.Contains(line, `msg="table appended"`):
			s.Appends++
		case strings.Contains(line, `msg="table maintained"`):
			s.Maintained++
			s.Rewritten += field(line, "rewritten_files")
			s.ExpiredSnapshots += field(line, "expired_snapshots")
			s.Orphans += field(line, "orphan_files")
		}
	}
}

// The checker finds what the kill test looks for: a duplicate, a missing
// offset, a changed column, an offset never produced.
func TestIcebergKillCheckerDetects(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_000).UTC()
	want := map[int32]map[int64]killRecord{0: {}}
	var rows []iceberg.Row
	for off := range int64(4) {
		r := iceberg.Row{Partition: 0, Offset: off, Timestamp: ts, AppendTime: ts, Key: []byte("k"), Value: []byte(fmt.Sprint(off)),
			Headers: []kbatch.Header{{Key: "h", Value: []byte("v")}}}
		want[0][off] = killRecord{row: r}
		rows = append(rows, r)
	}
	if bad := checkKillRows(want, rows); len(bad) != 0 {
		t.Fatalf("the rows produced: %v", bad)
	}
	nullKey := slices.Clone(rows)
	nullKey[1].Key = nil
	otherHeader := slices.Clone(rows)
	otherHeader[2].Headers = []kbatch.Header{{Key: "h", Value: []byte("w")}}
	stranger := append(slices.Clone(rows), iceberg.Row{Partition: 1, Offset: 0})
	for name, tc := range map[string]struct {
		rows []iceberg.Row
		want string
	}{
		"duplicate": {append(slices.Clone(rows), rows[2]), "offset 2: more than once"},
		"missing":   {rows[1:], "offset 0: produced, missing"},
		"null key":  {nullKey, "offset 1: key"},
		"header":    {otherHeader, "offset 2: headers"},
		"stranger":  {stranger, "partition 1 offset 0: in the table, never produced"},
	} {
		bad := checkKillRows(want, tc.rows)
		if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
			t.Errorf("%s: problems %q, want one with %q", name, bad, tc.want)
		}
	}
}

// `floe compactor` processes, one or two at once, SIGKILLed at random
// points (right after start, while they open the catalog, mid-pass and
// mid-maintenance) over many rounds while records are produced: once a
// last compactor caught up, each topic's table holds every produced
// offset exactly once with every column as produced, its watermark is
// the partitions' high watermarks, the rejected table holds each
// rejected offset exactly once, and the typed columns hold the values'
// fields. Replay a failure with FLOE_KILL_SEED=<seed from the log>.
func TestIcebergCompactorKilled(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLOE_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FLOE_KILL_SEED: %v", err)
		}
	}
	t.Logf("seed %d (FLOE_KILL_SEED=%d replays the kills)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	storeArgs := []string{"-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "kill"}
	// Short passes and leases; maintenance (snapshot expiry, small-file
	// rewrite, orphan deletion) every 300 ms; small appends (8 KiB of log
	// per pass) so that a pass commits often; log merges after 1 s.
	compArgs := append([]string{"-interval", "100ms", "-lease-ttl", "2s", "-grace", "300ms", "-orphan-age", "3s",
		"-merge-min-age", "1s", "-iceberg-max-bytes", "8192", "-iceberg-target-file-size", "65536",
		"-iceberg-maintain-interval", "300ms", "-iceberg-rewrite-min-files", "2", "-iceberg-keep-snapshots", "2",
		"-iceberg-snapshot-age", "1s", "-iceberg-orphan-age", "5s"}, storeArgs...)
	a := startFloe(t, append([]string{"agent"}, storeArgs...)...)
	c := dialT(t, a.addr)
	ctx := context.Background()

	const plainParts, typedParts = 4, 2
	if _, err := c.CreateTopic(ctx, "plain", plainParts, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "typed", typedParts, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	plain := map[int32]map[int64]killRecord{}
	typed := map[int32]map[int64]killRecord{}
	// Before the value schema, anything goes: values that conform, and
	// values that do not (not JSON, a wrong type, null), which land in
	// the rejected table.
	for p := range int32(typedParts) {
		var recs []*floev1.Record
		var meta []killRecord
		for i := range 7 {
			id := int64(100*int(p) + i)
			if i == 6 { // an empty value is not JSON
				recs = append(recs, &floev1.Record{Key: []byte("e"), TimestampMs: time.Now().UnixMilli()})
				meta = append(meta, killRecord{id: -1, wantR: true})
				continue
			}
			switch i % 3 {
			case 0:
				recs = append(recs, &floev1.Record{Key: []byte("t"), Value: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d"}`, id, id)), TimestampMs: time.Now().UnixMilli()})
				meta = append(meta, killRecord{id: id, name: fmt.Sprintf("n%d", id)})
			case 1:
				recs = append(recs, &floev1.Record{Value: []byte(fmt.Sprintf("not json %d", id)), TimestampMs: time.Now().UnixMilli()})
				meta = append(meta, killRecord{id: -1, wantR: true})
			default:
				if i == 2 { // a null value is neither typed nor rejected
					recs = append(recs, &floev1.Record{NullValue: true, TimestampMs: time.Now().UnixMilli()})
					meta = append(meta, killRecord{id: -1})
				} else {
					recs = append(recs, &floev1.Record{Value: []byte(`{"id":"text"}`), TimestampMs: time.Now().UnixMilli()})
					meta = append(meta, killRecord{id: -1, wantR: true})
				}
			}
		}
		killProduce(t, c, "typed", p, recs, typed, meta)
	}
	if _, err := c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "typed", Set: map[string]string{
		"value.schema": `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(ctx, "typed", 0, client.Value(nil, []byte("not json"))); err == nil {
		t.Fatal("a value that does not conform to the schema was accepted")
	}

	// The rounds: start one or two compactors, produce while they run,
	// kill each at its own random point.
	const rounds = 16
	nextID := int64(1000)
	var killed, afterAppend, crashed int
	var all []*killedCompactor
	for round := range rounds {
		n := 1 + rng.IntN(2)
		comps := make([]*killedCompactor, n)
		delays := make([]time.Duration, n)
		for i := range comps {
			comps[i] = spawnCompactor(t, compArgs...)
			switch {
			case rng.IntN(5) == 0: // right after start
				delays[i] = time.Duration(rng.IntN(50)) * time.Millisecond
			default:
				delays[i] = time.Duration(100+rng.IntN(2400)) * time.Millisecond
			}
		}
		started := time.Now()
		for p := range int32(plainParts) {
			recs := killRecords(rng, round, 2+rng.IntN(12))
			killProduce(t, c, "plain", p, recs, plain, make([]killRecord, len(recs)))
		}
		for p := range int32(typedParts) {
			var recs []*floev1.Record
			var meta []killRecord
			for range 1 + rng.IntN(4) {
				id := nextID
				nextID++
				recs = append(recs, &floev1.Record{Key: []byte(fmt.Sprint(id)), Value: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d"}`, id, id)),
					TimestampMs: time.Now().UnixMilli()})
				meta = append(meta, killRecord{id: id, name: fmt.Sprintf("n%d", id)})
			}
			if rng.IntN(3) == 0 { // a null value passes the schema
				recs = append(recs, &floev1.Record{Key: []byte("gone"), NullValue: true, TimestampMs: time.Now().UnixMilli()})
				meta = append(meta, killRecord{id: -1})
			}
			killProduce(t, c, "typed", p, recs, typed, meta)
		}
		all = append(all, comps...)
		order := []int{0, 1}[:n]
		slices.SortFunc(order, func(x, y int) int { return int(delays[x] - delays[y]) })
		for _, i := range order {
			time.Sleep(time.Until(started.Add(delays[i])))
			if comps[i].exited() {
				crashed++
				t.Errorf("round %d: compactor %d exited before its kill:\n%s", round, i, comps[i].text())
				continue
			}
			comps[i].kill()
			killed++
			if strings.Contains(comps[i].text(), "table appended") {
				afterAppend++
			}
		}
		t.Logf("round %d: %d compactor(s) killed after %v", round, n, delays[:n])
	}
	t.Logf("%d compactors killed, %d of them after at least one append", killed, afterAppend)
	// After the last kill, more records: the last compactor must append
	// them, through the leases the killed ones may still hold.
	for p := range int32(plainParts) {
		recs := killRecords(rng, rounds, 5)
		killProduce(t, c, "plain", p, recs, plain, make([]killRecord, len(recs)))
	}

	// The last compactor catches up within a bound: a dead owner's lease
	// (2 s) blocks nothing for long.
	high := func(want map[int32]map[int64]killRecord) iceberg.Watermark {
		wm := iceberg.Watermark{}
		for p, offs := range want {
			for off := range offs {
				wm[p] = max(wm[p], off+1)
			}
		}
		return wm
	}
	for topic, want := range map[string]map[int32]map[int64]killRecord{"plain": plain, "typed": typed} {
		d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: topic})
		if err != nil {
			t.Fatal(err)
		}
		hw := high(want)
		for _, p := range d.GetPartitions() {
			if p.GetHighWatermark() != hw[p.GetPartition()] {
				t.Fatalf("%s partition %d: high watermark %d, produced up to %d", topic, p.GetPartition(), p.GetHighWatermark(), hw[p.GetPartition()])
			}
		}
	}
	final := spawnCompactor(t, compArgs...)
	cfg := iceberg.DefaultPostgresConfig(dsn, s3.Bucket)
	cfg.Warehouse = "s3://" + s3.Bucket + "/kill/iceberg"
	cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKey, cfg.S3SecretKey = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey
	w, err := iceberg.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	caughtUp := time.Now()
	for _, topic := range []string{"plain", "typed"} {
		want := high(map[string]map[int32]map[int64]killRecord{"plain": plain, "typed": typed}[topic])
		for {
			wm, err := w.Watermark(ctx, topic)
			if err == nil && wm.Equal(want) {
				break
			}
			if final.exited() {
				t.Fatalf("the last compactor exited:\n%s", final.text())
			}
			if time.Since(caughtUp) > 30*time.Second {
				t.Fatalf("table %s: watermark %v, %v after 30 s; want %v\nlast compactor:\n%s", topic, wm, err, want, final.text())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("the last compactor caught up in %v", time.Since(caughtUp).Round(time.Millisecond))
	// The lease cursors, which DescribeTopic reads, follow the tables.
	for topic, want := range map[string]map[int32]map[int64]killRecord{"plain": plain, "typed": typed} {
		hw := high(want)
		for deadline := time.Now().Add(10 * time.Second); ; {
			d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: topic})
			if err != nil {
				t.Fatal(err)
			}
			ok := d.GetIceberg().GetKnown()
			for _, p := range d.GetPartitions() {
				ok = ok && p.GetIcebergWatermark() == hw[p.GetPartition()]
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("DescribeTopic %s: iceberg %v, partitions %v; want the table's watermark %v", topic, d.GetIceberg(), d.GetPartitions(), hw)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := final.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-final.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the last compactor did not stop on SIGTERM:\n%s", final.text())
	}
	// What the compactors did, from their logs: no panic; appends,
	// rewrites, snapshot expiry and orphan deletion ran.
	var st maintainStats
	for _, k := range append(all, final) {
		logs := k.text()
		if strings.Contains(logs, "panic") {
			t.Errorf("a compactor panicked:\n%s", logs)
		}
		st.add(logs)
	}
	t.Logf("compactor logs: %+v", st)
	if st.Appends == 0 || st.Maintained == 0 || st.Rewritten == 0 || st.ExpiredSnapshots == 0 {
		t.Errorf("the rounds did not exercise appends, rewrites and snapshot expiry: %+v", st)
	}

	// Every offset exactly once, every column as produced.
	for topic, want := range map[string]map[int32]map[int64]killRecord{"plain": plain, "typed": typed} {
		rows, err := w.Scan(ctx, topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		bad := checkKillRows(want, rows)
		for i, b := range bad {
			if i == 20 {
				t.Errorf("table %s: %d more problems", topic, len(bad)-i)
				break
			}
			t.Errorf("table %s: %s", topic, b)
		}
		st, err := w.Describe(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("table %s: %d rows in %d data files, %d bytes", topic, len(rows), st.DataFiles, st.Bytes)
	}
	// The typed columns, and each rejected offset once in the rejected
	// table.
	tbl, err := w.Load(ctx, "typed")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range killColumns(t, tbl, "value_fields.id", "value_fields.name") {
		p, _ := strconv.Atoi(r[iceberg.ColPartition])
		off, _ := strconv.ParseInt(r[iceberg.ColOffset], 10, 64)
		kr := typed[int32(p)][off]
		wantID, wantName := "null", "null"
		if kr.id >= 0 {
			wantID, wantName = fmt.Sprint(kr.id), strconv.Quote(kr.name)
		}
		if r["value_fields.id"] != wantID || r["value_fields.name"] != wantName {
			t.Errorf("typed partition %d offset %d: value_fields id %s name %s, want %s %s", p, off,
				r["value_fields.id"], r["value_fields.name"], wantID, wantName)
		}
	}
	rtbl, err := w.Catalog().LoadTable(ctx, w.RejectedIdentifier("typed"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int64]int{}
	for _, r := range killColumns(t, rtbl, iceberg.ColValue, iceberg.ColReason) {
		p, _ := strconv.Atoi(r[iceberg.ColPartition])
		off, _ := strconv.ParseInt(r[iceberg.ColOffset], 10, 64)
		seen[[2]int64{int64(p), off}]++
		kr, ok := typed[int32(p)][off]
		if !ok || !kr.wantR {
			t.Errorf("rejected table: partition %d offset %d was not rejected (%v)", p, off, r)
		}
		if r[iceberg.ColReason] == "null" || r[iceberg.ColReason] == `""` {
			t.Errorf("rejected table: partition %d offset %d: no reason", p, off)
		}
	}
	nRejected := 0
	for p, offs := range typed {
		for off, kr := range offs {
			if kr.wantR {
				nRejected++
				if n := seen[[2]int64{int64(p), off}]; n != 1 {
					t.Errorf("rejected table: partition %d offset %d %d times, want once", p, off, n)
				}
			}
		}
	}
	t.Logf("rejected table: %d rows, %d rejected records", len(seen), nRejected)
}
