package tableread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	iceio "github.com/apache/iceberg-go/io"
)

// Decoding a data file of floe's layout (package iceberg) straight from
// its Parquet column chunks, with arrow-go's low-level column readers:
// no Arrow arrays, no builder that copies every value, no row filter
// that copies every column again. A row's key, value and headers are
// read as slices of the decompressed page and copied once, into the
// row's tail in the scan's arena (rows.go). iceberg-go still plans the
// scan (which files); the row groups of a file are pruned here by their
// partition and offset statistics.
//
//	row group i:  partition  offset  timestamp  (append_time)  key  value  headers.key  headers.value
//	              int32      int64   int64                     bytes bytes  bytes (rep)   bytes (rep)
//	              read whole into slices of the row group's rows;      |
//	              keys and headers copied into the decode's scratch;   |
//	              the value column read page by page: each selected row's tail
//	              encoded into the arena as its value is decoded (the page is
//	              valid only until the next one is read)
//
// A file whose columns are not floe's (found by field id: the types and
// levels the iceberg package writes) is errLayout: the caller reads it
// through iceberg-go instead, as it does a file with delete files.
// Anything else that does not decode is an error of the read (and
// DataLoss once a fresh snapshot fails too); a panic in the decoders is
// ErrDataLoss, never a crash.

// errLayout: the file's columns are not floe's layout.
var errLayout = errors.New("tableread: not floe's Parquet layout")

// The field ids of floe's columns (iceberg.baseFields).
const (
	timestampFieldID = 3
	keyFieldID       = 5
	valueFieldID     = 6
	headerKeyID      = 9
	headerValueID    = 10
)

// decodeRange says which rows of a file a decode keeps.
type decodeRange struct {
	all     bool  // every row (no row group pruned); else only those below
	part    int32 // with onePart: only rows of part
	onePart bool
	lo, hi  int64                       // offsets [lo, hi)
	want    func(p int32, o int64) bool // nil: every row of those; else only the rows it wants
	// The file's offsets as its manifest gives them (bounds): a row
	// outside is ErrDataLoss.
	flo, fhi int64
	bounds   bool
}

// takes reports whether r keeps a row of partition p at offset o.
func (r *decodeRange) takes(p int32, o int64) bool {
	return r.all || (!r.onePart || p == r.part) && o >= r.lo && o < r.hi && (r.want == nil || r.want(p, o))
}

// prunes reports whether r keeps no row of a row group whose partition
// and offset statistics are these (ok false: none kept).
func (r *decodeRange) prunes(pmin, pmax int32, pok bool, omin, omax int64, ook bool) bool {
	if r.all {
		return false
	}
	if ook && (omax < r.lo || omin >= r.hi) {
		return true
	}
	return r.onePart && pok && (pmax < r.part || pmin > r.part)
}

// layout is where floe's columns are in a file.
type layout struct {
	part, off, ts, key, val, hk, hv int   // leaf column indices
	keyDef, valDef, hkDef, hvDef    int16 // their max definition levels
	tsPerMs                         int64 // timestamp units per millisecond
}

// layoutOf finds floe's columns in sch by field id (errLayout: not all
// there, or not of the types and levels floe writes).
func layoutOf(sch *schema.Schema) (layout, error) {
	l := layout{part: -1, off: -1, ts: -1, key: -1, val: -1, hk: -1, hv: -1}
	byID := map[int32]*int{partitionFieldID: &l.part, offsetFieldID: &l.off, timestampFieldID: &l.ts,
		keyFieldID: &l.key, valueFieldID: &l.val, headerKeyID: &l.hk, headerValueID: &l.hv}
	for i := range sch.NumColumns() {
		c := sch.Column(i)
		at, ok := byID[c.SchemaNode().FieldID()]
		if !ok {
			continue
		}
		if *at >= 0 {
			return l, fmt.Errorf("%w: field id %d twice", errLayout, c.SchemaNode().FieldID())
		}
		*at = i
	}
	col := func(i int, name string, typ parquet.Type, maxRep, maxDef int16) (*schema.Column, error) {
		if i < 0 {
			return nil, fmt.Errorf("%w: no %s column", errLayout, name)
		}
		c := sch.Column(i)
		if c.PhysicalType() != typ || c.MaxRepetitionLevel() != maxRep || c.MaxDefinitionLevel() > maxDef {
			return nil, fmt.Errorf("%w: column %s is %s, repetition %d, definition %d", errLayout, c.Path(), c.PhysicalType(), c.MaxRepetitionLevel(), c.MaxDefinitionLevel())
		}
		return c, nil
	}
	var (
		cs  [7]*schema.Column
		err error
	)
	for j, spec := range []struct {
		i      int
		name   string
		typ    parquet.Type
		rep    int16
		maxDef int16
	}{
		{l.part, "partition", parquet.Types.Int32, 0, 0},
		{l.off, "offset", parquet.Types.Int64, 0, 0},
		{l.ts, "timestamp", parquet.Types.Int64, 0, 0},
		{l.key, "key", parquet.Types.ByteArray, 0, 1},
		{l.val, "value", parquet.Types.ByteArray, 0, 1},
		{l.hk, "header key", parquet.Types.ByteArray, 1, 3},
		{l.hv, "header value", parquet.Types.ByteArray, 1, 4},
	} {
		if cs[j], err = col(spec.i, spec.name, spec.typ, spec.rep, spec.maxDef); err != nil {
			return l, err
		}
	}
	l.keyDef, l.valDef = cs[3].MaxDefinitionLevel(), cs[4].MaxDefinitionLevel()
	l.hkDef, l.hvDef = cs[5].MaxDefinitionLevel(), cs[6].MaxDefinitionLevel()
	// A header's value is optional, its key not: the value's levels are
	// the key's, and one more for a value present (or the same, required).
	if l.hkDef < 1 || l.hvDef != l.hkDef && l.hvDef != l.hkDef+1 {
		return l, fmt.Errorf("%w: header levels %d and %d", errLayout, l.hkDef, l.hvDef)
	}
	ts, ok := cs[2].LogicalType().(interface{ TimeUnit() schema.TimeUnitType })
	if !ok {
		return l, fmt.Errorf("%w: timestamp column is %s", errLayout, cs[2].LogicalType())
	}
	switch ts.TimeUnit() {
	case schema.TimeUnitMillis:
		l.tsPerMs = 1
	case schema.TimeUnitMicros:
		l.tsPerMs = 1000
	case schema.TimeUnitNanos:
		l.tsPerMs = 1_000_000
	default:
		return l, fmt.Errorf("%w: timestamp unit %v", errLayout, ts.TimeUnit())
	}
	return l, nil
}

// decoder holds one decode's scratch, reused across its row groups.
type decoder struct {
	a     *arena
	parts []int32
	offs  []int64
	ts    []int64
	take  []bool
	keys  []span // per row: its key in scratch (n < 0: null)
	hdrs  []int32
	hk    []span // per header: its key, its value, in scratch
	hv    []span
	hrow  []int32 // per header: its row
	bytes []byte  // keys' and headers' bytes
	vals  []parquet.ByteArray
	defs  []int16
	reps  []int16
}

// span is a slice of the decoder's scratch bytes (n < 0: null).
type span struct{ at, n int32 }

// levelBatch is how many levels one read of a column decodes at most.
const levelBatch = 1024

// maxGroupRows bounds the rows of a row group the decoder takes (it
// holds a row group's fixed columns, keys and headers at once); a file
// of larger ones is read through iceberg-go's scan.
const maxGroupRows = 1 << 20

// maxWindow bounds the bytes of a row group's column chunks read at
// once (windowReader); a larger row group's chunks are read as the
// Parquet reader asks.
const maxWindow = 64 << 20

// decodeFile reads the data file at path through fs and hands each row
// rg keeps to sink, in file order, its tail in a. mem is the decode's
// buffers' allocator; ft (nil: none) keeps the files' parsed footers.
func decodeFile(ctx context.Context, fs iceio.IO, path string, mem memory.Allocator, ft *footers, rg decodeRange, a *arena, sink func(row)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s does not decode: %v", ErrDataLoss, path, r)
		}
	}()
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("tableread: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("tableread: stat %s: %w", path, err)
	}
	src := &windowReader{f: f, mem: mem, size: st.Size()}
	defer src.release()
	props := parquet.NewReaderProperties(pageAllocator(mem))
	props.BufferedStreamEnabled = true // copied out of the row group's window (windowReader)
	props.BufferSize = 64 << 10
	opts := []file.ReadOption{file.WithReadProps(props)}
	kept, known := ft.get(path, st.Size())
	if known {
		opts = append(opts, file.WithMetadata(kept.md))
	}
	rdr, err := file.NewParquetReader(src, opts...)
	if err != nil {
		return fmt.Errorf("tableread: open %s: %w", path, err)
	}
	l := kept.l
	if !known {
		if l, err = layoutOf(rdr.MetaData().Schema); err != nil {
			return err
		}
		for i := range rdr.NumRowGroups() {
			if n := rdr.MetaData().RowGroup(i).NumRows(); n < 0 || n > maxGroupRows {
				// Not what floe writes (4,096 rows): iceberg-go's scan reads
				// it in batches.
				return fmt.Errorf("%w: row group %d of %d rows", errLayout, i, n)
			}
		}
		ft.put(path, st.Size(), footer{md: rdr.MetaData(), l: l})
	}
	d := decoder{a: a}
	for i := range rdr.NumRowGroups() {
		if err := ctx.Err(); err != nil {
			return err
		}
		g := rdr.RowGroup(i)
		if skip, err := prune(g.MetaData(), l, &rg); err != nil || skip {
			if err != nil {
				return fmt.Errorf("tableread: %s row group %d: %w", path, i, err)
			}
			continue
		}
		if err := src.load(g.MetaData(), l); err != nil {
			return fmt.Errorf("tableread: read %s row group %d: %w", path, i, err)
		}
		if err := d.rowGroup(g, l, &rg, sink); err != nil {
			return fmt.Errorf("tableread: %s row group %d: %w", path, i, err)
		}
	}
	return nil
}

// prune reports whether rg keeps none of a row group's rows, by its
// partition and offset statistics.
func prune(md *metadata.RowGroupMetaData, l layout, rg *decodeRange) (bool, error) {
	if rg.all {
		return false, nil
	}
	pmin, pmax, pok, err := minMax[int32](md, l.part)
	if err != nil {
		return false, err
	}
	omin, omax, ook, err := minMax[int64](md, l.off)
	if err != nil {
		return false, err
	}
	return rg.prunes(pmin, pmax, pok, omin, omax, ook), nil
}

// minMax is the least and greatest value of column i of a row group,
// as its statistics give them (ok false: they give none).
func minMax[T int32 | int64](md *metadata.RowGroupMetaData, i int) (lo, hi T, ok bool, err error) {
	cc, err := md.ColumnChunk(i)
	if err != nil {
		return 0, 0, false, err
	}
	if set, _ := cc.StatsSet(); !set {
		return 0, 0, false, nil
	}
	s, err := cc.Statistics()
	if err != nil {
		return 0, 0, false, nil // unreadable statistics prune nothing
	}
	switch st := s.(type) {
	case *metadata.Int32Statistics:
		if st.HasMinMax() {
			return T(st.Min()), T(st.Max()), true, nil
		}
	case *metadata.Int64Statistics:
		if st.HasMinMax() {
			return T(st.Min()), T(st.Max()), true, nil
		}
	}
	return 0, 0, false, nil
}

// rowGroup decodes one row group.
func (d *decoder) rowGroup(g *file.RowGroupReader, l layout, rg *decodeRange, sink func(row)) error {
	n := g.NumRows()
	if n < 0 || n > maxGroupRows {
		return fmt.Errorf("%w: a row group of %d rows", ErrDataLoss, n)
	}
	col := func(i int) (file.ColumnChunkReader, error) { return g.Column(i) }
	// The fixed columns, whole.
	var err error
	if d.parts, err = readFixed(col, l.part, n, d.parts, func(c file.ColumnChunkReader) (func(int64, []int32) (int64, error), bool) {
		r, ok := c.(*file.Int32ColumnChunkReader)
		return func(k int64, v []int32) (int64, error) { t, _, err := r.ReadBatch(k, v, nil, nil); return t, err }, ok
	}); err != nil {
		return err
	}
	int64s := func(c file.ColumnChunkReader) (func(int64, []int64) (int64, error), bool) {
		r, ok := c.(*file.Int64ColumnChunkReader)
		return func(k int64, v []int64) (int64, error) { t, _, err := r.ReadBatch(k, v, nil, nil); return t, err }, ok
	}
	if d.offs, err = readFixed(col, l.off, n, d.offs, int64s); err != nil {
		return err
	}
	d.take = resize(d.take, int(n))
	taken := 0
	for i := range d.take {
		o := d.offs[i]
		if rg.bounds && (o < rg.flo || o > rg.fhi) {
			return fmt.Errorf("%w: holds offset %d, outside the offsets [%d, %d] its manifest gives", ErrDataLoss, o, rg.flo, rg.fhi)
		}
		d.take[i] = rg.takes(d.parts[i], o)
		if d.take[i] {
			taken++
		}
	}
	if taken == 0 {
		return nil
	}
	if d.ts, err = readFixed(col, l.ts, n, d.ts, int64s); err != nil {
		return err
	}
	for i, t := range d.ts {
		d.ts[i] = floorDiv(t, l.tsPerMs)
	}
	// Keys and headers, copied into scratch (their pages do not outlive
	// the next page of their column).
	d.bytes = d.bytes[:0]
	d.keys = resize(d.keys, int(n))
	if err := d.readBytes(col, l.key, l.keyDef, n, func(i int, v []byte, null bool) {
		d.keys[i] = d.keep(v, null || !d.take[i])
	}); err != nil {
		return err
	}
	if err := d.readHeaders(col, l, n); err != nil {
		return err
	}
	// The values, page by page: each taken row's tail encoded as its
	// value is decoded.
	var rowHeaders func(j int) (string, []byte)
	var h0 int32
	rowHeaders = func(j int) (string, []byte) {
		k, v := d.hk[int(h0)+j], d.hv[int(h0)+j]
		return d.str(k), d.at(v)
	}
	return d.readBytes(col, l.val, l.valDef, n, func(i int, v []byte, null bool) {
		if !d.take[i] {
			return
		}
		if null {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		h0 = d.hdrs[i]
		tail := d.a.addTail(d.at(d.keys[i]), v, int(d.hdrs[i+1]-h0), rowHeaders)
		sink(row{part: d.parts[i], rec: recOf(d.offs[i], d.ts[i], tail)})
	})
}

// keep copies v into scratch (drop: keeps nothing, null).
func (d *decoder) keep(v []byte, drop bool) span {
	if drop {
		return span{n: -1}
	}
	at := len(d.bytes)
	d.bytes = append(d.bytes, v...)
	return span{at: int32(at), n: int32(len(v))}
}

// at is s's bytes (nil: null; empty, not nil, when empty).
func (d *decoder) at(s span) []byte {
	if s.n < 0 {
		return nil
	}
	return d.bytes[s.at : s.at+s.n : s.at+s.n]
}

// str is s's bytes as a string, not copied (valid while the scratch is:
// AppendTail copies it at once).
func (d *decoder) str(s span) string {
	if s.n <= 0 {
		return ""
	}
	return unsafe.String(&d.bytes[s.at], int(s.n))
}

// readFixed reads column i, required, of n rows into dst.
func readFixed[T any](col func(int) (file.ColumnChunkReader, error), i int, n int64, dst []T, as func(file.ColumnChunkReader) (func(int64, []T) (int64, error), bool)) ([]T, error) {
	c, err := col(i)
	if err != nil {
		return dst, err
	}
	defer c.Close()
	read, ok := as(c)
	if !ok {
		return dst, fmt.Errorf("%w: column %d is %s", ErrDataLoss, i, c.Type())
	}
	dst = resize(dst, int(n))
	var got int64
	for got < n {
		k, err := read(n-got, dst[got:])
		if err != nil {
			return dst, fmt.Errorf("column %s: %w", c.Descriptor().Path(), err)
		}
		if k == 0 {
			break
		}
		got += k
	}
	if got != n {
		return dst, fmt.Errorf("%w: column %s holds %d of its row group's %d rows", ErrDataLoss, c.Descriptor().Path(), got, n)
	}
	return dst, nil
}

// readBytes reads column i (bytes, not repeated, max definition level
// maxDef) of n rows, calling each with each row's value (a slice of the
// page: valid only while each runs).
func (d *decoder) readBytes(col func(int) (file.ColumnChunkReader, error), i int, maxDef int16, n int64, each func(i int, v []byte, null bool)) error {
	r, err := bytesColumn(col, i)
	if err != nil {
		return err
	}
	defer r.Close()
	c := r
	d.vals, d.defs = resize(d.vals, levelBatch), resize(d.defs, levelBatch)
	var row int64
	for row < n {
		lv, nv, err := r.ReadBatchInPage(min(levelBatch, n-row), d.vals, d.defs, nil)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Descriptor().Path(), err)
		}
		if lv == 0 {
			break
		}
		k := 0
		for j := range int(lv) {
			if maxDef > 0 && d.defs[j] < maxDef {
				each(int(row)+j, nil, true)
				continue
			}
			if k >= nv {
				return fmt.Errorf("%w: column %s: %d values for its levels", ErrDataLoss, c.Descriptor().Path(), nv)
			}
			each(int(row)+j, d.vals[k], false)
			k++
		}
		row += lv
	}
	if row != n {
		return fmt.Errorf("%w: column %s holds %d of its row group's %d rows", ErrDataLoss, c.Descriptor().Path(), row, n)
	}
	return nil
}

// readHeaders reads the headers' two columns of n rows: d.hdrs[i] to
// d.hdrs[i+1] are row i's headers in d.hk and d.hv (rows not taken have
// their headers counted, their bytes not kept).
func (d *decoder) readHeaders(col func(int) (file.ColumnChunkReader, error), l layout, n int64) error {
	d.hk, d.hv, d.hrow = d.hk[:0], d.hv[:0], d.hrow[:0]
	d.reps = resize(d.reps, levelBatch)
	// The keys: each level at the key's full definition is a header.
	row := int64(-1)
	if err := d.readLevels(col, l.hk, n, func(rep, def int16, v []byte, hasValue bool) error {
		if rep == 0 {
			row++
		}
		if row < 0 || row >= n {
			return fmt.Errorf("%w: the header keys hold more than their row group's %d rows", ErrDataLoss, n)
		}
		if def < l.hkDef {
			return nil // an empty list
		}
		if !hasValue {
			return fmt.Errorf("%w: a header without a key", ErrDataLoss)
		}
		d.hrow = append(d.hrow, int32(row))
		d.hk = append(d.hk, d.keep(v, !d.take[row]))
		return nil
	}); err != nil {
		return err
	}
	if row+1 != n {
		return fmt.Errorf("%w: the header keys hold %d of their row group's %d rows", ErrDataLoss, row+1, n)
	}
	// The values: the same levels, one more for a value present.
	row, e := int64(-1), 0
	if err := d.readLevels(col, l.hv, n, func(rep, def int16, v []byte, hasValue bool) error {
		if rep == 0 {
			row++
		}
		if row < 0 || row >= n {
			return fmt.Errorf("%w: the header values hold more than their row group's %d rows", ErrDataLoss, n)
		}
		if def < l.hkDef {
			return nil
		}
		if e >= len(d.hrow) || int64(d.hrow[e]) != row {
			return fmt.Errorf("%w: the header values do not match their keys", ErrDataLoss)
		}
		e++
		d.hv = append(d.hv, d.keep(v, !hasValue || !d.take[row]))
		return nil
	}); err != nil {
		return err
	}
	if row+1 != n || e != len(d.hrow) {
		return fmt.Errorf("%w: the header values hold %d rows and %d headers, their keys %d and %d", ErrDataLoss, row+1, e, n, len(d.hrow))
	}
	d.hdrs = resize(d.hdrs, int(n)+1)
	h := 0
	for i := range int(n) + 1 {
		for h < len(d.hrow) && int(d.hrow[h]) < i {
			h++
		}
		d.hdrs[i] = int32(h)
	}
	return nil
}

// bytesColumn opens column i, of bytes.
func bytesColumn(col func(int) (file.ColumnChunkReader, error), i int) (*file.ByteArrayColumnChunkReader, error) {
	c, err := col(i)
	if err != nil {
		return nil, err
	}
	r, ok := c.(*file.ByteArrayColumnChunkReader)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("%w: column %d is %s", ErrDataLoss, i, c.Type())
	}
	return r, nil
}

// readLevels reads a repeated bytes column to its end, calling each with
// every level (v a slice of the page when hasValue: valid only while
// each runs).
func (d *decoder) readLevels(col func(int) (file.ColumnChunkReader, error), i int, n int64, each func(rep, def int16, v []byte, hasValue bool) error) error {
	r, err := bytesColumn(col, i)
	if err != nil {
		return err
	}
	defer r.Close()
	c := r
	maxDef := c.Descriptor().MaxDefinitionLevel()
	d.vals, d.defs, d.reps = resize(d.vals, levelBatch), resize(d.defs, levelBatch), resize(d.reps, levelBatch)
	for r.HasNext() {
		lv, nv, err := r.ReadBatchInPage(levelBatch, d.vals, d.defs, d.reps)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Descriptor().Path(), err)
		}
		if lv == 0 {
			break
		}
		k := 0
		for j := range int(lv) {
			var v []byte
			has := d.defs[j] == maxDef
			if has {
				if k >= nv {
					return fmt.Errorf("%w: column %s: %d values for its levels", ErrDataLoss, c.Descriptor().Path(), nv)
				}
				v = d.vals[k]
				k++
			}
			if err := each(d.reps[j], d.defs[j], v, has); err != nil {
				return fmt.Errorf("column %s: %w", c.Descriptor().Path(), err)
			}
		}
	}
	if err := c.Err(); err != nil {
		return fmt.Errorf("column %s: %w", c.Descriptor().Path(), err)
	}
	return nil
}

// resize returns s of length n, its contents undefined.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// floorDiv is a / b rounded down (b > 0), as time.Time.UnixMilli is.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// windowReader reads a data file for the Parquet reader: the column
// chunks of the row group being decoded come from one read of the row
// group's span (load), the rest (the footer) from the file. Over S3 each
// read of the file is a GET: one per row group, not one per 64 KiB of
// every column.
type windowReader struct {
	f    iceio.File
	size int64 // the file's
	mem  memory.Allocator
	buf  []byte // the window, of the pool (nil: none)
	at   int64  // the file offset of buf[0]
}

// load reads the span of md's column chunks that l names into the window.
func (w *windowReader) load(md *metadata.RowGroupMetaData, l layout) error {
	lo, hi := int64(-1), int64(-1)
	for _, i := range []int{l.part, l.off, l.ts, l.key, l.val, l.hk, l.hv} {
		cc, err := md.ColumnChunk(i)
		if err != nil {
			return err
		}
		start := cc.DataPageOffset()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
			start = cc.DictionaryPageOffset()
		}
		end := start + cc.TotalCompressedSize()
		if start < 0 || end < start {
			return fmt.Errorf("%w: column chunk at %d of %d bytes", ErrDataLoss, start, cc.TotalCompressedSize())
		}
		if lo < 0 || start < lo {
			lo = start
		}
		hi = max(hi, end)
	}
	w.release()
	if hi > w.size {
		return fmt.Errorf("%w: column chunks end at %d, past the file's %d bytes", ErrDataLoss, hi, w.size)
	}
	if hi-lo > maxWindow {
		return nil // not windowed: read as the reader asks
	}
	n := int(hi - lo)
	b := pageAllocator(w.mem).Allocate(n) // read over whole
	got, err := w.f.ReadAt(b, lo)
	if err != nil && !(errors.Is(err, io.EOF) && got == n) {
		w.mem.Free(b)
		return err
	}
	w.buf, w.at = b, lo
	return nil
}

// release gives the window back.
func (w *windowReader) release() {
	if w.buf != nil {
		w.mem.Free(w.buf)
		w.buf = nil
	}
}

// ReadAt reads from the window when it holds p's bytes, else the file.
func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	if w.buf != nil && off >= w.at && off+int64(len(p)) <= w.at+int64(len(w.buf)) {
		return copy(p, w.buf[off-w.at:]), nil
	}
	return w.f.ReadAt(p, off)
}

// Seek seeks the file (the Parquet reader finds its size so).
func (w *windowReader) Seek(off int64, whence int) (int64, error) { return w.f.Seek(off, whence) }
