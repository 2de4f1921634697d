package tableread

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
)

// rowColumns are the columns a read takes (not the typed value_fields).
// The append time is not in a Kafka record: not read.
var rowColumns = []string{iceberg.ColPartition, iceberg.ColOffset, iceberg.ColTimestamp,
	iceberg.ColKey, iceberg.ColValue, iceberg.ColHeaders}

// offsetFieldID is the offset column's field id in floe's layout.
const offsetFieldID = 2

// window is the filter partition = p AND lo <= offset < hi.
func window(p int32, lo, hi int64) icego.BooleanExpression {
	return icego.NewAnd(icego.EqualTo(icego.Reference(iceberg.ColPartition), p),
		icego.GreaterThanEqual(icego.Reference(iceberg.ColOffset), lo),
		icego.LessThan(icego.Reference(iceberg.ColOffset), hi))
}

// scanRows reads tbl's rows of partition p with offsets in [lo, hi),
// sorted by offset and checked (sortRows). A file that does not decode
// is ErrDataLoss. With otherBudget > 0 the scan takes every partition's
// rows of [lo, hi) (a row group holds many partitions: decoding it costs
// the same) and returns, in others, those of the partitions whose rows
// all fit in otherBudget bytes, each sorted and checked: their next reads
// need no scan.
//
// The Parquet pages decode batchRows rows at a time (arrowRows): the
// scan holds one such Arrow batch decoded (and the row group's column
// chunks), not the whole row group as Arrow arrays.
func scanRows(ctx context.Context, tbl *table.Table, p int32, lo, hi, otherBudget int64, batchRows int) (rows []row, others map[int32][]row, err error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil, nil
	}
	filter := window(p, lo, hi)
	if otherBudget > 0 {
		filter = icego.NewAnd(icego.GreaterThanEqual(icego.Reference(iceberg.ColOffset), lo), icego.LessThan(icego.Reference(iceberg.ColOffset), hi))
		others = map[int32][]row{}
	}
	opts := []table.ScanOption{table.WithSelectedFields(rowColumns...), table.WithMaxConcurrency(1), table.WithArrowBatchSize(batchRows)}
	scan := tbl.Scan(append(opts, table.WithRowFilter(filter))...)
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tableread: plan partition %d [%d, %d): %w", p, lo, hi, err)
	}
	// When the scan takes every partition's rows (otherBudget > 0), a
	// file whose offsets all lie in the window (its manifest bounds say
	// so), or that is one row group (the row filter could prune nothing
	// of it), is read without the row filter: its rows outside the window
	// are skipped before they are copied, and the filter's copy of every
	// column of every batch is saved. A row of such a file outside its
	// bounds is DataLoss. Other files, and every file of a scan for one
	// partition (whose row groups the partition's statistics may prune),
	// are read with the filter.
	var inside, straddle []table.FileScanTask
	for _, t := range tasks {
		flo, fhi, ok := offsetBounds(t.File)
		if ok && others != nil && (flo >= lo && fhi < hi || len(t.File.SplitOffsets()) == 1) {
			inside = append(inside, t)
		} else {
			straddle = append(straddle, t)
		}
	}
	var whole *table.Scan
	if len(inside) > 0 {
		whole = tbl.Scan(opts...)
		defer whole.Close()
	}
	var (
		got     []row
		tails   arena
		spent   int64
		dropped = map[int32]bool{}
	)
	keep := func(r row) {
		switch {
		case r.part == p || others == nil:
			rows = append(rows, r) // another partition here fails sortRows
		case dropped[r.part]:
		case spent+int64(r.size()) > otherBudget:
			for _, o := range others[r.part] {
				spent -= int64(o.size())
			}
			delete(others, r.part)
			dropped[r.part] = true
		default:
			others[r.part] = append(others[r.part], r)
			spent += int64(r.size())
		}
	}
	read := func(sc *table.Scan, ts []table.FileScanTask, filtered bool) error {
		_, batches, err := sc.ReadTasks(ctx, ts)
		if err != nil {
			return fmt.Errorf("tableread: read partition %d [%d, %d): %w", p, lo, hi, err)
		}
		for rec, err := range batches {
			if err != nil {
				return fmt.Errorf("tableread: read partition %d [%d, %d): %w", p, lo, hi, err)
			}
			if !filtered {
				// The file's own bounds: a row outside them is corrupt.
				flo, fhi, _ := offsetBounds(ts[0].File)
				offs, ok := rec.Column(colIndex(rec.Schema().FieldIndices(iceberg.ColOffset))).(*array.Int64)
				if !ok {
					rec.Release()
					return fmt.Errorf("%w: %s does not have floe's layout", ErrDataLoss, ts[0].File.FilePath())
				}
				for i := range offs.Len() {
					if o := offs.Value(i); o < flo || o > fhi {
						rec.Release()
						return fmt.Errorf("%w: %s holds offset %d, outside the offsets [%d, %d] its manifest gives", ErrDataLoss, ts[0].File.FilePath(), o, flo, fhi)
					}
				}
			}
			got, err = appendBatchRows(got[:0], &tails, rec, !filtered, lo, hi)
			rec.Release()
			if err != nil {
				return fmt.Errorf("%w: partition %d [%d, %d): %w", ErrDataLoss, p, lo, hi, err)
			}
			for _, r := range got {
				keep(r)
			}
		}
		return nil
	}
	for _, t := range inside {
		if err := read(whole, []table.FileScanTask{t}, false); err != nil {
			return nil, nil, err
		}
	}
	if len(straddle) > 0 {
		if err := read(scan, straddle, true); err != nil {
			return nil, nil, err
		}
	}
	if err := sortRows(rows, p, lo, hi); err != nil {
		return nil, nil, err
	}
	for q, qr := range others {
		if err := sortRows(qr, q, lo, hi); err != nil {
			return nil, nil, err
		}
	}
	return rows, others, nil
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

// arrowBatchBytes is about the bytes of rows one Arrow batch decodes.
const arrowBatchBytes = 1 << 20

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
