package tableread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
)

// rowColumns are the columns a read takes (not the typed value_fields).
// The append time is not in a Kafka record: not read.
var rowColumns = []string{iceberg.ColPartition, iceberg.ColOffset, iceberg.ColTimestamp,
	iceberg.ColKey, iceberg.ColValue, iceberg.ColHeaders}

// The partition and offset columns' field ids in floe's layout.
const (
	partitionFieldID = 1
	offsetFieldID    = 2
)

// window is the filter partition = p AND lo <= offset < hi.
func window(p int32, lo, hi int64) icego.BooleanExpression {
	return icego.NewAnd(icego.EqualTo(icego.Reference(iceberg.ColPartition), p),
		icego.GreaterThanEqual(icego.Reference(iceberg.ColOffset), lo),
		icego.LessThan(icego.Reference(iceberg.ColOffset), hi))
}

// offsets is the filter lo <= offset < hi.
func offsets(lo, hi int64) icego.BooleanExpression {
	return icego.NewAnd(icego.GreaterThanEqual(icego.Reference(iceberg.ColOffset), lo), icego.LessThan(icego.Reference(iceberg.ColOffset), hi))
}

// scanRows reads tbl's rows of partition p with offsets in [lo, hi),
// sorted by offset and checked (sortRows). A file that does not decode
// is ErrDataLoss.
//
// With budget > 0 the scan takes every partition's rows (a row group
// holds many partitions: decoding it costs the same) and reads on past
// hi, up to upTo, as far as the files it decodes anyway reach (reach):
// a file's row group is decoded whole whatever the window, so the rows
// a later window would decode it again for are kept now. It returns the
// rows of p in [lo, reach), and in others, per other partition, its rows
// of [lo, its hi): what fits of each partition in its share of budget
// bytes (budget over the partitions the files span), every row of its
// range, sorted and checked. Their next reads, and p's, need no scan
// until they pass what was kept. Without a budget it reads [lo, hi) of
// p only (reach is hi).
//
// A file of floe's layout is decoded from its column chunks a row group
// at a time (decode.go); one read through iceberg-go's scan instead
// decodes about 4 MiB of rows of rowBytes at a time (arrowRows).
//
// floor (nil: none) is, per other partition, the offset below which its
// rows are not wanted (the read-ahead holds them; math.MaxInt64: none
// is): they are not decoded, and its kept rows start there (kept.lo).
//
// The files come from ps's plan of the snapshot (plan.go; nil ps: planned
// for this scan); ft keeps their parsed footers (footers.go; nil: none).
func scanRows(ctx context.Context, tbl *table.Table, ps *plans, p int32, lo, hi, upTo, budget int64, rowBytes int, floor func(q int32) int64, files *fileCache, ft *footers, st *scanStats) (rows []row, reach int64, others map[int32]kept, err error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, hi, nil, nil
	}
	reach = hi
	filter, bounds := window(p, lo, hi), scanBounds{part: p, lo: lo, hi: hi}
	if budget > 0 {
		// Plan every file that may hold an offset of [lo, upTo): the ones
		// that start past hi are not read, and bound how far the rows
		// read speak for.
		filter, bounds = offsets(lo, upTo), scanBounds{anyPart: true, lo: lo, hi: upTo}
		others = map[int32]kept{}
	}
	opts := []table.ScanOption{table.WithSelectedFields(rowColumns...), table.WithMaxConcurrency(1), table.WithArrowBatchSize(arrowRows(rowBytes))}
	plan := tbl.Scan(append(opts, table.WithRowFilter(filter))...)
	defer plan.Close()
	tasks, err := ps.tasks(ctx, tbl, opts, filter, bounds)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("tableread: plan partition %d [%d, %d): %w", p, lo, hi, err)
	}
	if budget > 0 {
		var read []table.FileScanTask
		reach = upTo
		for _, t := range tasks {
			if flo, _, ok := offsetBounds(t.File); ok && flo >= hi {
				reach = min(reach, flo) // holds nothing below its first offset
				continue
			}
			read = append(read, t)
		}
		tasks = read
		// Past hi, at most about a partition's share of the budget.
		if w := windowOffsets(int(min(budget/int64(spanned(tasks)), math.MaxInt32)), rowBytes); lo <= math.MaxInt64-w {
			reach = min(reach, max(hi, lo+w))
		}
	}
	// When the scan takes every partition's rows (budget > 0), a file
	// whose offsets all lie in [lo, reach) (its manifest bounds say so),
	// or that is one row group (the row filter could prune nothing of
	// it), is read without the row filter: its rows outside the range
	// are skipped before they are copied, and the filter's copy of every
	// column of every batch is saved. A row of such a file outside its
	// bounds is DataLoss. Other files, and every file of a scan for one
	// partition (whose row groups the partition's statistics may prune),
	// are read with the filter.
	var inside, straddle []table.FileScanTask
	for _, t := range tasks {
		flo, fhi, ok := offsetBounds(t.File)
		if ok && others != nil && (flo >= lo && fhi < reach || len(t.File.SplitOffsets()) == 1) {
			inside = append(inside, t)
		} else {
			straddle = append(straddle, t)
		}
	}
	scan := plan
	if budget > 0 && len(straddle) > 0 {
		scan = tbl.Scan(append(opts, table.WithRowFilter(offsets(lo, reach)))...)
		defer scan.Close()
	}
	var whole *table.Scan
	if len(inside) > 0 {
		whole = tbl.Scan(opts...)
		defer whole.Close()
	}
	var (
		tails arena
		k     keeper
		want  func(q int32, o int64) bool // the rows the keeper may keep: the others not decoded
	)
	defer func() { st.tails.Add(tails.n) }()
	if others != nil {
		k = keeper{p: p, lo: lo, hi: hi, share: budget / int64(spanned(tasks)), floor: floor, parts: map[int32]*kept{}}
		want = k.wants
	}
	keep := func(r row) {
		if others == nil {
			rows = append(rows, r) // another partition here fails sortRows
			return
		}
		k.add(r)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("tableread: the table's files: %w", err)
	}
	mem := compute.GetAllocator(ctx)
	// read reads t and hands each row that rg keeps to sink: decoded from
	// its column chunks (decode.go), or through iceberg-go's scan sc
	// (with its row filter when filtered) when t has deletes or is not of
	// floe's layout. A row outside the file's manifest bounds is DataLoss.
	read := func(sc *table.Scan, t table.FileScanTask, filtered bool, rg decodeRange, sink func(row)) error {
		st.files.Add(1)
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) == 0 {
			rg.flo, rg.fhi, rg.bounds = offsetBounds(t.File)
			err := decodeFile(ctx, fsys, t.File.FilePath(), mem, ft, rg, &tails, sink)
			if !errors.Is(err, errLayout) {
				if err != nil {
					return fmt.Errorf("tableread: read partition %d [%d, %d): %w", p, lo, reach, err)
				}
				return nil
			}
		}
		st.viaArrow.Add(1)
		return readArrow(ctx, sc, t, filtered, !rg.all, lo, reach, &tails, sink)
	}
	inRange := func(r row) {
		if r.rec.Offset >= lo && r.rec.Offset < reach {
			keep(r)
		}
	}
	for _, t := range inside {
		path := t.File.FilePath()
		all, ok := files.get(path)
		if !ok {
			all = nil
			if err := read(whole, t, false, decodeRange{all: files.on(), lo: lo, hi: reach, want: want}, func(r row) { all = append(all, r) }); err != nil {
				return nil, 0, nil, err
			}
			files.put(path, all)
		}
		for _, r := range all {
			inRange(r)
		}
	}
	// The straddling files: the rows of [lo, reach), of p only without a
	// budget (reach is hi then).
	for _, t := range straddle {
		if err := read(scan, t, true, decodeRange{part: p, onePart: others == nil, lo: lo, hi: reach, want: want}, keep); err != nil {
			return nil, 0, nil, err
		}
	}
	if others != nil {
		scanned := reach
		for q, kq := range k.parts {
			kq.hi = min(kq.hi, scanned)
			if err := sortRows(kq.rows, q, lo, scanned); err != nil {
				return nil, 0, nil, err
			}
			kq.rows = kq.rows[:sort.Search(len(kq.rows), func(i int) bool { return kq.rows[i].rec.Offset >= kq.hi })]
			if q == p {
				rows, reach = kq.rows, kq.hi
				continue
			}
			others[q] = *kq
		}
		return rows, reach, others, nil
	}
	if err := sortRows(rows, p, lo, hi); err != nil {
		return nil, 0, nil, err
	}
	return rows, reach, nil, nil
}

// readArrow reads t through iceberg-go's scan sc (with its row filter
// when filtered), handing sink each row (those in [lo, hi) only when
// skip), its tail in tails: the path of files with deletes, or of
// another layout than floe's. A file read unfiltered has its offsets
// checked against its manifest bounds.
func readArrow(ctx context.Context, sc *table.Scan, t table.FileScanTask, filtered, skip bool, lo, hi int64, tails *arena, sink func(row)) error {
	_, batches, err := sc.ReadTasks(ctx, []table.FileScanTask{t})
	if err != nil {
		return fmt.Errorf("tableread: read %s: %w", t.File.FilePath(), err)
	}
	var got []row
	for rec, err := range batches {
		if err != nil {
			return fmt.Errorf("tableread: read %s: %w", t.File.FilePath(), err)
		}
		if !filtered {
			// The file's own bounds: a row outside them is corrupt.
			flo, fhi, _ := offsetBounds(t.File)
			offs, ok := rec.Column(colIndex(rec.Schema().FieldIndices(iceberg.ColOffset))).(*array.Int64)
			if !ok {
				rec.Release()
				return fmt.Errorf("%w: %s does not have floe's layout", ErrDataLoss, t.File.FilePath())
			}
			for i := range offs.Len() {
				if o := offs.Value(i); o < flo || o > fhi {
					rec.Release()
					return fmt.Errorf("%w: %s holds offset %d, outside the offsets [%d, %d] its manifest gives", ErrDataLoss, t.File.FilePath(), o, flo, fhi)
				}
			}
		}
		got, err = appendBatchRows(got[:0], tails, rec, skip, lo, hi)
		rec.Release()
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrDataLoss, t.File.FilePath(), err)
		}
		for _, r := range got {
			sink(r)
		}
	}
	return nil
}

// scanStats count what scans read (tests).
type scanStats struct {
	files    atomic.Int64 // data files read
	viaArrow atomic.Int64 // of them, read through iceberg-go's scan
	tails    atomic.Int64 // bytes of tails decoded
}

// kept is what a scan kept of a partition: every row of [lo, hi) (lo
// the scan's, or the partition's floor above it).
type kept struct {
	rows   []row
	lo, hi int64
}

// keeper keeps the rows a scan of every partition decodes: each
// partition's rows from its floor (the scan's lo when higher) up to the
// first offset that does not fit in its share (p's rows below hi, the
// window asked for, always).
type keeper struct {
	p     int32
	lo    int64 // the scan's
	hi    int64
	share int64
	floor func(q int32) int64 // nil: every partition's rows from lo
	parts map[int32]*kept
	spent map[int32]int64
}

// of is q's kept rows, started at its floor when first met.
func (k *keeper) of(q int32) *kept {
	kq := k.parts[q]
	if kq == nil {
		kq = &kept{lo: k.lo, hi: math.MaxInt64}
		if k.floor != nil && q != k.p {
			kq.lo = max(kq.lo, k.floor(q))
		}
		k.parts[q] = kq
	}
	return kq
}

// wants reports whether the keeper may keep a row of q at offset o (it
// is not below q's floor nor past where q's rows were cut): a row it
// does not want need not be decoded.
func (k *keeper) wants(q int32, o int64) bool {
	kq := k.of(q)
	return o >= kq.lo && o < kq.hi
}

// add keeps r, or lowers its partition's hi to r's offset when r does
// not fit (the rows past it are cut when the scan ends).
func (k *keeper) add(r row) {
	kq := k.of(r.part)
	if k.spent == nil {
		k.spent = map[int32]int64{}
	}
	if r.rec.Offset < kq.lo || r.rec.Offset >= kq.hi {
		return
	}
	n := int64(r.size())
	if k.spent[r.part]+n > k.share && (r.part != k.p || r.rec.Offset >= k.hi) {
		kq.hi = r.rec.Offset
		return
	}
	k.spent[r.part] += n
	kq.rows = append(kq.rows, r)
}

// spanned is how many partitions the files of tasks may hold, as their
// manifest bounds of the partition column give them (1 at least).
func spanned(tasks []table.FileScanTask) int {
	lo, hi, any := int32(math.MaxInt32), int32(math.MinInt32), false
	for _, t := range tasks {
		l, lok := t.File.LowerBoundValues()[partitionFieldID]
		h, hok := t.File.UpperBoundValues()[partitionFieldID]
		if !lok || !hok || len(l) != 4 || len(h) != 4 {
			continue
		}
		lo, hi, any = min(lo, int32(binary.LittleEndian.Uint32(l))), max(hi, int32(binary.LittleEndian.Uint32(h))), true
	}
	if !any || hi < lo {
		return 1
	}
	return int(min(int64(hi)-int64(lo)+1, 1<<16))
}

// offsetBounds are the least and greatest offset of a data file, as its
// manifest entry gives them (ok false: it gives none).
func offsetBounds(f icego.DataFile) (lo, hi int64, ok bool) {
	l, lok := f.LowerBoundValues()[offsetFieldID]
	h, hok := f.UpperBoundValues()[offsetFieldID]
	if !lok || !hok || len(l) != 8 || len(h) != 8 {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(l)), int64(binary.LittleEndian.Uint64(h)), true
}

// arrowRows is how many rows one Arrow batch of a scan decodes: about
// arrowBatchBytes of rows of rowBytes each (1 KiB before any is known).
func arrowRows(rowBytes int) int {
	if rowBytes <= 0 {
		rowBytes = 1024
	}
	return min(8192, max(64, arrowBatchBytes/rowBytes))
}

// arrowBatchBytes is about the bytes of rows one Arrow batch decodes:
// 4 MiB took 18% less CPU per MiB served than 1 MiB in BenchmarkCatchUp
// (fewer batches through iceberg-go's projection and pqarrow's
// builders); 8 MiB no less, 256 KiB and 64 KiB more.
const arrowBatchBytes = 4 << 20

// firstOffset returns the first offset tbl holds of partition p (-1:
// none): it reads the offset column of the files that may hold p, in the
// order of their lower bounds, until no file left can hold a lower one.
func firstOffset(ctx context.Context, tbl *table.Table, p int32) (int64, error) {
	if tbl.CurrentSnapshot() == nil {
		return -1, nil
	}
	filter := icego.EqualTo(icego.Reference(iceberg.ColPartition), p)
	scan := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(iceberg.ColPartition, iceberg.ColOffset), table.WithMaxConcurrency(1))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return 0, fmt.Errorf("tableread: plan partition %d: %w", p, err)
	}
	lower := func(t table.FileScanTask) int64 {
		if b, ok := t.File.LowerBoundValues()[offsetFieldID]; ok && len(b) == 8 {
			return int64(binary.LittleEndian.Uint64(b))
		}
		return 0
	}
	sort.SliceStable(tasks, func(i, j int) bool { return lower(tasks[i]) < lower(tasks[j]) })
	best := int64(-1)
	for _, task := range tasks {
		if best >= 0 && lower(task) >= best {
			break
		}
		_, batches, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			return 0, fmt.Errorf("tableread: read %s: %w", task.File.FilePath(), err)
		}
		for rec, err := range batches {
			if err != nil {
				return 0, fmt.Errorf("tableread: read %s: %w", task.File.FilePath(), err)
			}
			offs, ok1 := rec.Column(int(colIndex(rec.Schema().FieldIndices(iceberg.ColOffset)))).(*array.Int64)
			parts, ok2 := rec.Column(int(colIndex(rec.Schema().FieldIndices(iceberg.ColPartition)))).(*array.Int32)
			if !ok1 || !ok2 {
				rec.Release()
				return 0, fmt.Errorf("%w: %s does not have floe's layout", ErrDataLoss, task.File.FilePath())
			}
			for i := 0; i < offs.Len(); i++ {
				if parts.Value(i) == p && (best < 0 || offs.Value(i) < best) {
					best = offs.Value(i)
				}
			}
			rec.Release()
		}
	}
	return best, nil
}

// colIndex is the one index of a column (0 when absent or ambiguous: the
// type assertion on it then fails).
func colIndex(idx []int) int {
	if len(idx) != 1 {
		return 0
	}
	return idx[0]
}
