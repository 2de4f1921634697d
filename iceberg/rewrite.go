package iceberg

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Rewriting small files: every append writes at least one data file per
// day it touches, so a quiet topic appended every minute makes 1,440
// small files a day. A rewrite reads the small files of a day partition
// and writes their rows again as files of the target size, sorted by
// partition and offset, and commits in ONE snapshot (operation replace)
// that removes the old files and adds the new ones, asserting that the
// table's main branch is still at the snapshot it planned from. The rows
// do not change, nor does the watermark (a table property, copied into
// the snapshot's summary), so a reader sees every row exactly once
// before and after. A rewrite whose commit fails leaves the table as it
// was; its new files are orphans for DeleteOrphanFiles.

// RewriteOptions tune a rewrite of small files.
type RewriteOptions struct {
	// MinFiles: a day partition is rewritten when it holds more than
	// MinFiles small files (at least 1).
	MinFiles int
	// SmallFileBytes: a data file smaller than this is small. 0 takes
	// three quarters of the writer's target file size: a file the
	// writer closed at the target is not rewritten again.
	SmallFileBytes int64
	// MaxBytes bounds the bytes of small files one rewrite reads (the
	// rest waits for the next); 0 takes twice the target file size. The
	// rows of one day's files are held in memory at once, decoded (a few
	// times their files' size).
	MaxBytes int64
}

// RewriteResult tells what a rewrite did.
type RewriteResult struct {
	// Days rewritten, data files removed and added, and their bytes.
	Days                     int
	FilesRemoved, FilesAdded int
	BytesRemoved, BytesAdded int64
	// SnapshotID is the rewrite's snapshot; 0 when nothing was due.
	SnapshotID int64
}

// rewriteFile is what planning needs of a data file.
type rewriteFile struct {
	path  string
	bytes int64
	day   int32 // the day partition (days since 1970-01-01)
	task  table.FileScanTask
}

// planRewrite picks the groups of files to rewrite: per day partition
// with more than minFiles files smaller than small, those small files in
// their given order, days in order, until the bytes picked reach maxBytes:
// a day is cut there (the rest waits for the next rewrite), and a group
// of fewer than two files is not worth rewriting. The first two files are
// taken whatever their size, so that something always moves. Pure.
func planRewrite(files []rewriteFile, minFiles int, small, maxBytes int64) [][]rewriteFile {
	byDay := map[int32][]rewriteFile{}
	for _, f := range files {
		if f.bytes < small {
			byDay[f.day] = append(byDay[f.day], f)
		}
	}
	days := make([]int32, 0, len(byDay))
	for d, fs := range byDay {
		if len(fs) > minFiles {
			days = append(days, d)
		}
	}
	slices.Sort(days)
	var (
		out   [][]rewriteFile
		total int64
	)
	for _, d := range days {
		var g []rewriteFile
		for _, f := range byDay[d] {
			if (len(out) > 0 || len(g) >= 2) && total+f.bytes > maxBytes {
				break
			}
			g = append(g, f)
			total += f.bytes
		}
		if len(g) >= 2 {
			out = append(out, g)
		}
		if total >= maxBytes || len(g) < len(byDay[d]) {
			break
		}
	}
	return out
}

// dayOf returns the day partition value of a data file of spec (the
// partition field over the timestamp column).
func dayOf(df icego.DataFile, spec icego.PartitionSpec) (int32, bool) {
	if spec.NumFields() != 1 {
		return 0, false
	}
	v, ok := df.Partition()[spec.Field(0).FieldID]
	if !ok {
		return 0, false
	}
	switch d := v.(type) {
	case int32:
		return d, true
	case icego.Date:
		return int32(d), true
	case int:
		return int32(d), true
	case int64:
		return int32(d), true
	}
	return 0, false
}

// dataFiles plans tbl's current data files with their day partition.
func dataFiles(ctx context.Context, tbl *table.Table) (*table.Scan, []rewriteFile, error) {
	scan := tbl.Scan()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		scan.Close()
		return nil, nil, fmt.Errorf("iceberg: plan files of %v: %w", tbl.Identifier(), err)
	}
	spec := tbl.Spec()
	out := make([]rewriteFile, 0, len(tasks))
	for _, task := range tasks {
		day, ok := dayOf(task.File, spec)
		if !ok {
			continue // not partitioned by day (a table floe did not lay out): left alone
		}
		out = append(out, rewriteFile{path: task.File.FilePath(), bytes: task.File.FileSizeBytes(), day: day, task: task})
	}
	return scan, out, nil
}

// RewriteSmallFiles rewrites topic's table's small data files (see
// RewriteOptions) into files of the target size, in one snapshot. A
// table that does not exist, or has nothing due, is left alone.
func (w *Writer) RewriteSmallFiles(ctx context.Context, topic string, opts RewriteOptions) (RewriteResult, error) {
	return w.rewriteSmallFiles(ctx, topic, mainTable, opts)
}

// rewriteSmallFiles is RewriteSmallFiles on topic's table of kind k.
func (w *Writer) rewriteSmallFiles(ctx context.Context, topic string, k tableKind, opts RewriteOptions) (RewriteResult, error) {
	ctx = w.writes(ctx)
	var res RewriteResult
	if opts.MinFiles < 1 || opts.SmallFileBytes < 0 || opts.MaxBytes < 0 {
		return res, fmt.Errorf("%w: rewrite options %+v", ErrInvalidConfig, opts)
	}
	if opts.SmallFileBytes == 0 {
		opts.SmallFileBytes = w.opts.TargetFileSize * 3 / 4
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 2 * w.opts.TargetFileSize
	}
	tbl, err := w.load(ctx, topic, k)
	if missing(err) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if tbl.CurrentSnapshot() == nil {
		return res, nil
	}
	scan, files, err := dataFiles(ctx, tbl)
	if err != nil {
		return res, err
	}
	defer scan.Close()
	groups := planRewrite(files, opts.MinFiles, opts.SmallFileBytes, opts.MaxBytes)
	if len(groups) == 0 {
		return res, nil
	}
	var removed, added []icego.DataFile
	for _, g := range groups {
		tasks := make([]table.FileScanTask, len(g))
		for i, f := range g {
			tasks[i] = f.task
			removed = append(removed, f.task.File)
			res.BytesRemoved += f.bytes
		}
		out, err := w.rewriteGroup(ctx, tbl, scan, tasks)
		if err != nil {
			return res, err
		}
		for _, df := range out {
			res.BytesAdded += df.FileSizeBytes()
		}
		added = append(added, out...)
	}
	res.Days, res.FilesRemoved, res.FilesAdded = len(groups), len(removed), len(added)
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return res, fmt.Errorf("iceberg: assert snapshot: %w", err)
	}
	summary := icego.Properties{PropWatermark: tbl.Properties()[PropWatermark],
		"floe.rewrite": strconv.Itoa(len(removed)) + ">" + strconv.Itoa(len(added))}
	rw := tx.NewRewrite(summary)
	for _, df := range removed {
		rw.DeleteFile(df)
	}
	for _, df := range added {
		rw.AddDataFile(df)
	}
	if err := rw.Commit(ctx); err != nil {
		return res, fmt.Errorf("iceberg: stage rewrite of %v: %w", tbl.Identifier(), err)
	}
	committed, err := tx.Commit(ctx)
	if err != nil {
		return res, fmt.Errorf("iceberg: commit rewrite of %v: %w", tbl.Identifier(), err)
	}
	if snap := committed.CurrentSnapshot(); snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	w.log.Info("iceberg: rewrote small files", "topic", topic, "table", tbl.Identifier(), "days", res.Days, "files_removed", res.FilesRemoved,
		"files_added", res.FilesAdded, "bytes_removed", res.BytesRemoved, "bytes_added", res.BytesAdded)
	return res, nil
}

// rewriteGroup reads the rows of tasks (files of one day) and writes them
// again, sorted by partition and offset, as files of the target size. It
// works on Arrow batches of the table's own schema, whatever its columns.
func (w *Writer) rewriteGroup(ctx context.Context, tbl *table.Table, scan *table.Scan, tasks []table.FileScanTask) ([]icego.DataFile, error) {
	sc, batches, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("iceberg: read files of %v: %w", tbl.Identifier(), err)
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for rec, err := range batches {
		if err != nil {
			return nil, fmt.Errorf("iceberg: read files of %v: %w", tbl.Identifier(), err)
		}
		recs = append(recs, rec) // owned by us now; released above
	}
	order, err := sortedRuns(recs)
	if err != nil {
		return nil, fmt.Errorf("iceberg: rewrite %v: %w", tbl.Identifier(), err)
	}
	slicesIter := func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range order {
			// WriteRecords releases what it consumes: a slice is a new
			// reference.
			if !yield(recs[r.rec].NewSlice(int64(r.from), int64(r.to)), nil) {
				return
			}
		}
	}
	var out []icego.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, iter.Seq2[arrow.RecordBatch, error](slicesIter),
		table.WithTargetFileSize(w.opts.TargetFileSize), table.WithClusteredWrite(), table.WithParquetRowGroupLimit(w.opts.RowGroupRows)) {
		if err != nil {
			return nil, fmt.Errorf("iceberg: write rewritten files of %v: %w", tbl.Identifier(), err)
		}
		out = append(out, df)
	}
	return out, nil
}

// run is rows [from, to) of batch rec.
type run struct{ rec, from, to int }

// sortedRuns returns the rows of recs in partition and offset order, as
// runs of consecutive rows of one batch (each file holds its rows in
// that order already, so the runs are few).
func sortedRuns(recs []arrow.RecordBatch) ([]run, error) {
	type pos struct {
		part     int32
		off      int64
		rec, row int
	}
	var all []pos
	for i, rec := range recs {
		p, ok1 := column(rec, ColPartition).(*array.Int32)
		o, ok2 := column(rec, ColOffset).(*array.Int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("batch has no int %q and long %q columns", ColPartition, ColOffset)
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			all = append(all, pos{part: p.Value(r), off: o.Value(r), rec: i, row: r})
		}
	}
	slices.SortFunc(all, func(a, b pos) int {
		return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.off, b.off))
	})
	var out []run
	for i, p := range all {
		if i > 0 && all[i-1].part == p.part && all[i-1].off == p.off {
			return nil, fmt.Errorf("partition %d offset %d twice", p.part, p.off)
		}
		if n := len(out); n > 0 && out[n-1].rec == p.rec && out[n-1].to == p.row {
			out[n-1].to++
			continue
		}
		out = append(out, run{rec: p.rec, from: p.row, to: p.row + 1})
	}
	return out, nil
}

// column returns rec's column called name, or nil.
func column(rec arrow.RecordBatch, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil
	}
	return rec.Column(idx[0])
}

// ExpireDays deletes topic's table's data files whose day partition ends
// at or before cutoff (every row's timestamp is older), in one snapshot
// (operation overwrite, rows deleted) that asserts the branch it planned
// from. The watermark does not move: the table no longer holds those
// rows, and never will again. It returns the files and rows deleted.
func (w *Writer) ExpireDays(ctx context.Context, topic string, cutoff time.Time) (files int, rows int64, err error) {
	return w.expireDays(ctx, topic, mainTable, cutoff)
}

// expireDays is ExpireDays on topic's table of kind k.
func (w *Writer) expireDays(ctx context.Context, topic string, k tableKind, cutoff time.Time) (files int, rows int64, err error) {
	ctx = w.writes(ctx)
	tbl, err := w.load(ctx, topic, k)
	if missing(err) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if tbl.CurrentSnapshot() == nil {
		return 0, 0, nil
	}
	scan, all, err := dataFiles(ctx, tbl)
	if err != nil {
		return 0, 0, err
	}
	scan.Close()
	var gone []icego.DataFile
	for _, f := range all {
		if DayExpired(f.day, cutoff) {
			gone = append(gone, f.task.File)
			rows += f.task.File.Count()
		}
	}
	if len(gone) == 0 {
		return 0, 0, nil
	}
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return 0, 0, fmt.Errorf("iceberg: assert snapshot: %w", err)
	}
	summary := icego.Properties{PropWatermark: tbl.Properties()[PropWatermark],
		"floe.expired-before": cutoff.UTC().Format(time.RFC3339)}
	if err := tx.ReplaceDataFilesWithDataFiles(ctx, gone, nil, summary); err != nil {
		return 0, 0, fmt.Errorf("iceberg: stage expiry of %v: %w", tbl.Identifier(), err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("iceberg: commit expiry of %v: %w", tbl.Identifier(), err)
	}
	w.log.Info("iceberg: deleted expired days", "topic", topic, "table", tbl.Identifier(), "files", len(gone), "rows", rows, "before", cutoff)
	return len(gone), rows, nil
}

// DayExpired reports whether the day partition day (days since
// 1970-01-01, UTC) lies wholly before cutoff: its last instant is older.
func DayExpired(day int32, cutoff time.Time) bool {
	end := time.Unix(0, 0).UTC().AddDate(0, 0, int(day)+1)
	return !end.After(cutoff)
}
