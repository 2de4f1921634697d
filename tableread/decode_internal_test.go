package tableread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
)

// variedRows are rows of three partitions with every shape a record
// takes: null, empty and long keys and values (some longer than a page),
// no headers to several, header values null and empty, timestamps
// before 1970.
func variedRows(n int64) ([]iceberg.Row, iceberg.Watermark) {
	var rows []iceberg.Row
	wm := iceberg.Watermark{}
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for p := range int32(3) {
		for off := range n {
			r := iceberg.Row{Partition: p, Offset: off, Timestamp: day.Add(time.Duration(off) * 1500 * time.Microsecond), AppendTime: day,
				Key: fmt.Appendf(nil, "k%d", off%9), Value: fmt.Appendf(nil, `{"p":%d,"o":%d,"pad":"%s"}`, p, off, strings.Repeat("y", int(off*37%900)))}
			switch off % 13 {
			case 1:
				r.Key = nil
			case 2:
				r.Key = []byte{}
			case 3:
				r.Value = nil
			case 4:
				r.Value = []byte{}
			case 5:
				r.Value = bytes.Repeat([]byte{byte(off)}, 40<<10) // past a page
			case 6:
				r.Timestamp = time.UnixMilli(-1 - off).Add(-300 * time.Microsecond)
			}
			for j := range int(off % 4) {
				h := kbatch.Header{Key: fmt.Sprintf("h%d", j), Value: fmt.Appendf(nil, "v%d-%d", off, j)}
				switch (off + int64(j)) % 5 {
				case 0:
					h.Value = nil
				case 1:
					h.Value = []byte{}
				case 2:
					h.Key = ""
				}
				r.Headers = append(r.Headers, h)
			}
			rows = append(rows, r)
		}
		wm[p] = n
	}
	return rows, wm
}

// variedTable writes variedRows to a table of small files, row groups
// and pages (several of each), and returns its data files.
func variedTable(t *testing.T, ctx context.Context) (*table.Table, []table.FileScanTask) {
	t.Helper()
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{TargetFileSize: 512 << 10, BatchRows: 64})
	rows, wm := variedRows(1500)
	tbl, tasks := appendFiles(t, ctx, w, rows, wm)
	if len(tasks) < 2 {
		t.Fatalf("%d data files, want several", len(tasks))
	}
	return tbl, tasks
}

// appendFiles appends rows to topic t and returns its table and data
// files.
func appendFiles(t *testing.T, ctx context.Context, w *iceberg.Writer, rows []iceberg.Row, wm iceberg.Watermark) (*table.Table, []table.FileScanTask) {
	t.Helper()
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatal(err)
	}
	tbl, err := w.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, tasks
}

// TestDecodeMatchesArrowScan: the column chunk decoder keeps, of every
// data file, the rows iceberg-go's Arrow scan reads, byte for byte, and
// the same rows of a range; the files have several row groups and the
// value columns several pages (checked).
func TestDecodeMatchesArrowScan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tbl, tasks := variedTable(t, ctx)
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan(table.WithSelectedFields(rowColumns...))
	defer scan.Close()
	mem := newAllocPool(64 << 20)
	mem.poison = true // a row that points into a freed page reads garbage
	var groups, pages, total int
	for _, task := range tasks {
		path := task.File.FilePath()
		var want []row
		var wa arena
		if err := readArrow(ctx, scan, task, false, false, 0, 0, &wa, func(r row) { want = append(want, r) }); err != nil {
			t.Fatal(err)
		}
		flo, fhi, ok := offsetBounds(task.File)
		if !ok {
			t.Fatalf("%s: no offset bounds", path)
		}
		for _, rg := range []decodeRange{
			{all: true},
			{lo: 100, hi: 900},
			{part: 1, onePart: true, lo: 0, hi: 1 << 40},
			{part: 2, onePart: true, lo: 700, hi: 701},
			{lo: fhi + 1, hi: fhi + 100}, // none
		} {
			rg.flo, rg.fhi, rg.bounds = flo, fhi, true
			var got []row
			var a arena
			if err := decodeFile(ctx, fsys, path, mem, nil, rg, &a, func(r row) { got = append(got, r) }); err != nil {
				t.Fatalf("%s %+v: %v", path, rg, err)
			}
			var exp []row
			for _, r := range want {
				if rg.takes(r.part, r.rec.Offset) {
					exp = append(exp, r)
				}
			}
			if len(got) != len(exp) {
				t.Fatalf("%s %+v: %d rows, the Arrow scan %d", path, rg, len(got), len(exp))
			}
			for i := range got {
				g, e := got[i], exp[i]
				if g.part != e.part || g.rec.Offset != e.rec.Offset || g.rec.Timestamp != e.rec.Timestamp || !bytes.Equal(g.rec.Tail, e.rec.Tail) {
					t.Fatalf("%s %+v: row %d is %d/%d at %d (%d bytes), the Arrow scan's %d/%d at %d (%d bytes)", path, rg, i,
						g.part, g.rec.Offset, g.rec.Timestamp, len(g.rec.Tail), e.part, e.rec.Offset, e.rec.Timestamp, len(e.rec.Tail))
				}
			}
		}
		total += len(want)
		g, p := pagesOf(t, path)
		groups, pages = groups+g, pages+p
	}
	if total != 3*1500 {
		t.Fatalf("the files hold %d rows, want %d", total, 3*1500)
	}
	if groups <= len(tasks) || pages <= groups {
		t.Fatalf("%d files, %d row groups, %d value pages: want several row groups and pages per file", len(tasks), groups, pages)
	}
}

// pagesOf is the row groups of a local Parquet file and its value
// column's data pages.
func pagesOf(t *testing.T, path string) (groups, pages int) {
	t.Helper()
	f, err := os.Open(strings.TrimPrefix(path, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	l, err := layoutOf(rdr.MetaData().Schema)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rdr.NumRowGroups() {
		pr, err := rdr.RowGroup(i).GetColumnPageReader(l.val)
		if err != nil {
			t.Fatal(err)
		}
		for pr.Next() {
			if _, ok := pr.Page().(file.DataPage); ok {
				pages++
			}
		}
		_ = pr.Close()
	}
	return rdr.NumRowGroups(), pages
}

// floeSchema is the Parquet schema of floe's columns as the iceberg
// package writes them, with change applied to its fields first.
func floeSchema(t *testing.T, change func(fields []schema.Node) []schema.Node) *schema.Schema {
	t.Helper()
	must := func(n schema.Node, err error) schema.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ts := schema.NewTimestampLogicalType(true, schema.TimeUnitMicros)
	elem := must(schema.NewGroupNode("element", parquet.Repetitions.Required, schema.FieldList{
		must(schema.NewPrimitiveNodeLogical("key", parquet.Repetitions.Required, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, 9)),
		must(schema.NewPrimitiveNode("value", parquet.Repetitions.Optional, parquet.Types.ByteArray, 10, -1)),
	}, 8))
	list := must(schema.NewGroupNode("list", parquet.Repetitions.Repeated, schema.FieldList{elem}, -1))
	fields := []schema.Node{
		must(schema.NewPrimitiveNode("partition", parquet.Repetitions.Required, parquet.Types.Int32, 1, -1)),
		must(schema.NewPrimitiveNode("offset", parquet.Repetitions.Required, parquet.Types.Int64, 2, -1)),
		must(schema.NewPrimitiveNodeLogical("timestamp", parquet.Repetitions.Required, ts, parquet.Types.Int64, -1, 3)),
		must(schema.NewPrimitiveNodeLogical("append_time", parquet.Repetitions.Required, ts, parquet.Types.Int64, -1, 4)),
		must(schema.NewPrimitiveNode("key", parquet.Repetitions.Optional, parquet.Types.ByteArray, 5, -1)),
		must(schema.NewPrimitiveNode("value", parquet.Repetitions.Optional, parquet.Types.ByteArray, 6, -1)),
		must(schema.NewGroupNodeLogical("headers", parquet.Repetitions.Required, schema.FieldList{list}, schema.ListLogicalType{}, 7)),
	}
	if change != nil {
		fields = change(fields)
	}
	root := must(schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1))
	return schema.NewSchema(root.(*schema.GroupNode))
}

// TestLayoutOf: floe's columns are found by field id whatever their
// order and names; any other shape is errLayout (read through
// iceberg-go instead), never a wrong decode.
func TestLayoutOf(t *testing.T) {
	prim := func(name string, rep parquet.Repetition, typ parquet.Type, id int32) schema.Node {
		n, err := schema.NewPrimitiveNode(name, rep, typ, id, -1)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	replace := func(i int, n schema.Node) func([]schema.Node) []schema.Node {
		return func(f []schema.Node) []schema.Node { f[i] = n; return f }
	}
	tsOf := func(unit schema.TimeUnitType) schema.Node {
		n, err := schema.NewPrimitiveNodeLogical("timestamp", parquet.Repetitions.Required, schema.NewTimestampLogicalType(true, unit), parquet.Types.Int64, -1, 3)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		name    string
		change  func([]schema.Node) []schema.Node
		perMs   int64
		wantErr bool
	}{
		{name: "floe's", perMs: 1000},
		{name: "reversed", change: func(f []schema.Node) []schema.Node {
			for i, j := 0, len(f)-1; i < j; i, j = i+1, j-1 {
				f[i], f[j] = f[j], f[i]
			}
			return f
		}, perMs: 1000},
		{name: "renamed", change: replace(1, prim("off", parquet.Repetitions.Required, parquet.Types.Int64, 2)), perMs: 1000},
		{name: "millis", change: replace(2, tsOf(schema.TimeUnitMillis)), perMs: 1},
		{name: "nanos", change: replace(2, tsOf(schema.TimeUnitNanos)), perMs: 1_000_000},
		{name: "no headers", change: func(f []schema.Node) []schema.Node { return f[:6] }, wantErr: true},
		{name: "no offset", change: replace(1, prim("offset", parquet.Repetitions.Required, parquet.Types.Int64, 99)), wantErr: true},
		{name: "offset int32", change: replace(1, prim("offset", parquet.Repetitions.Required, parquet.Types.Int32, 2)), wantErr: true},
		{name: "partition optional", change: replace(0, prim("partition", parquet.Repetitions.Optional, parquet.Types.Int32, 1)), wantErr: true},
		{name: "key repeated", change: replace(4, prim("key", parquet.Repetitions.Repeated, parquet.Types.ByteArray, 5)), wantErr: true},
		{name: "timestamp not one", change: replace(2, prim("timestamp", parquet.Repetitions.Required, parquet.Types.Int64, 3)), wantErr: true},
		{name: "value id twice", change: replace(3, prim("append_time", parquet.Repetitions.Required, parquet.Types.ByteArray, 6)), wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := layoutOf(floeSchema(t, c.change))
			if c.wantErr {
				if !errors.Is(err, errLayout) {
					t.Fatalf("layoutOf: %+v, %v; want errLayout", l, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.tsPerMs != c.perMs || l.keyDef != 1 || l.valDef != 1 || l.hkDef != 1 || l.hvDef != 2 {
				t.Fatalf("layoutOf: %+v", l)
			}
		})
	}
}

// TestDecodeRange: which rows a decode keeps and which row groups it
// skips by their statistics.
func TestDecodeRange(t *testing.T) {
	r := decodeRange{part: 2, onePart: true, lo: 10, hi: 20}
	for _, c := range []struct {
		p    int32
		o    int64
		want bool
	}{{2, 10, true}, {2, 19, true}, {2, 20, false}, {2, 9, false}, {1, 15, false}} {
		if got := r.takes(c.p, c.o); got != c.want {
			t.Errorf("takes(%d, %d) = %v", c.p, c.o, got)
		}
	}
	any := decodeRange{lo: 10, hi: 20}
	if !any.takes(7, 10) || any.takes(7, 20) {
		t.Error("a range of every partition")
	}
	all := decodeRange{all: true, lo: 10, hi: 20}
	if !all.takes(7, 99) || all.prunes(0, 0, true, 50, 60, true) {
		t.Error("every row")
	}
	for _, c := range []struct {
		name       string
		pmin, pmax int32
		pok        bool
		omin, omax int64
		ook        bool
		want       bool
	}{
		{"inside", 0, 5, true, 0, 100, true, false},
		{"offsets below", 0, 5, true, 0, 9, true, true},
		{"offsets above", 0, 5, true, 20, 30, true, true},
		{"offsets touch lo", 0, 5, true, 0, 10, true, false},
		{"partitions below", 0, 1, true, 0, 100, true, true},
		{"partitions above", 3, 5, true, 0, 100, true, true},
		{"no statistics", 0, 0, false, 0, 0, false, false},
		{"no partition statistics", 3, 5, false, 0, 100, true, false},
	} {
		if got := r.prunes(c.pmin, c.pmax, c.pok, c.omin, c.omax, c.ook); got != c.want {
			t.Errorf("%s: prunes = %v", c.name, got)
		}
	}
	if any.prunes(3, 5, true, 0, 100, true) {
		t.Error("a range of every partition pruned by partition")
	}
}

// FuzzDecodeFile: a data file with any bytes changed decodes to an error
// or to rows, never a panic, and never a row outside its range.
func FuzzDecodeFile(f *testing.F) {
	seed := seedFile(f)
	f.Add(seed, 0, byte(0))
	f.Add(seed, len(seed)/2, byte(0xff))
	f.Add(seed[:len(seed)-9], 0, byte(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, at int, b byte) {
		if len(data) > 0 {
			data = bytes.Clone(data)
			data[(at%len(data)+len(data))%len(data)] ^= b
		}
		path := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var a arena
		rg := decodeRange{lo: 5, hi: 50}
		_ = decodeFile(context.Background(), iceio.LocalFS{}, path, memory.NewGoAllocator(), nil, rg, &a, func(r row) {
			if !rg.takes(r.part, r.rec.Offset) {
				t.Fatalf("row %d/%d outside %+v", r.part, r.rec.Offset, rg)
			}
		})
	})
}

// goldenFile is a data file of floe's layout as the iceberg package
// writes it: seedRows, two row groups, zstd; the key column dictionary
// encoded, the value column plain.
const goldenFile = "testdata/rows.parquet"

// seedRows are the rows of goldenFile: 40 of partition 0.
func seedRows() []iceberg.Row {
	rows, _ := variedRows(40)
	rows = rows[:40]
	for i := range rows {
		if len(rows[i].Value) > 100 {
			rows[i].Value = rows[i].Value[:100]
		}
		if rows[i].Timestamp.Year() < 2000 { // one day: one file
			rows[i].Timestamp = rows[0].Timestamp.Add(time.Duration(i) * time.Second)
		}
	}
	return rows
}

// seedFile is goldenFile's bytes.
func seedFile(tb testing.TB) []byte {
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// TestGoldenDataFile pins the layout the decoder reads: goldenFile, as
// the iceberg package wrote it, decodes to seedRows (FLOE_UPDATE_GOLDEN=1
// writes it afresh, not under CI).
func TestGoldenDataFile(t *testing.T) {
	rows := seedRows()
	if os.Getenv("FLOE_UPDATE_GOLDEN") == "1" && os.Getenv("CI") == "" {
		w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{RowGroupRows: 25})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, tasks := appendFiles(t, ctx, w, rows, iceberg.Watermark{0: int64(len(rows))})
		if len(tasks) != 1 {
			t.Fatalf("%d data files, want 1", len(tasks))
		}
		data, err := os.ReadFile(strings.TrimPrefix(tasks[0].File.FilePath(), "file://"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []row
	var a arena
	if err := decodeFile(context.Background(), iceio.LocalFS{}, goldenFile, memory.NewGoAllocator(), nil, decodeRange{all: true}, &a, func(r row) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if g, _ := pagesOf(t, goldenFile); g != 2 {
		t.Fatalf("%s has %d row groups, want 2", goldenFile, g)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i, r := range rows {
		want := kbatch.AppendTail(nil, r.Key, r.Value, len(r.Headers), func(j int) (string, []byte) { return r.Headers[j].Key, r.Headers[j].Value })
		g := got[i]
		if g.part != r.Partition || g.rec.Offset != r.Offset || g.rec.Timestamp != r.Timestamp.UnixMilli() || !bytes.Equal(g.rec.Tail, want) {
			t.Fatalf("row %d: %d/%d at %d, tail %q; want %d/%d at %d, tail %q", i, g.part, g.rec.Offset, g.rec.Timestamp, g.rec.Tail,
				r.Partition, r.Offset, r.Timestamp.UnixMilli(), want)
		}
	}
}
