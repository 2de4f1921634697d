package tableread

import (
	"context"
	"encoding/binary"
	"strconv"
	"sync"
	"sync/atomic"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Which data files a scan reads.
//
// iceberg-go plans a scan by reading every manifest of the snapshot
// (Avro, each file's reader built afresh): a table catch-up, one scan per
// window, spent 14% of the agent's CPU planning the same files over and
// over (a profile of a 1,000 MB catch-up). A snapshot's files never
// change, so a reader plans each snapshot once, without a filter, and
// picks each scan's files from that plan by their partition and offset
// bounds (mayHold): the files iceberg-go's planner would keep for the
// scan's filter, or more (a file without bounds is kept), never fewer;
// the rows outside the scan's range are dropped when the file is read,
// as for any file the planner keeps. The plans are bounded (planFiles
// across all snapshots); a snapshot of more files than that is planned
// per scan with the filter, as before.

// planFiles bounds the data files the plans of a reader keep, across
// tables (a task with its file's bounds is about 2 KiB).
const planFiles = 16384

// plans are snapshots' data files as planned once.
type plans struct {
	max  int
	made atomic.Int64 // snapshots planned (tests)

	mu     sync.Mutex                      // protects bySnap and files
	bySnap map[string][]table.FileScanTask // by metadata location (one snapshot)
	files  int                             // tasks held in bySnap
}

func newPlans(max int) *plans { return &plans{max: max, bySnap: map[string][]table.FileScanTask{}} }

// tasks returns the tasks of tbl's current snapshot that may hold a row
// of the scan (mayHold with s), planned with opts (and filter, when the
// snapshot is not planned whole).
func (ps *plans) tasks(ctx context.Context, tbl *table.Table, opts []table.ScanOption, filter icego.BooleanExpression, s scanBounds) ([]table.FileScanTask, error) {
	all, ok, err := ps.whole(ctx, tbl, opts)
	if err != nil {
		return nil, err
	}
	if !ok {
		plan := tbl.Scan(append(opts, table.WithRowFilter(filter))...)
		defer plan.Close()
		return plan.PlanFiles(ctx)
	}
	var out []table.FileScanTask
	for _, t := range all {
		if mayHold(boundsOf(t.File), s) {
			out = append(out, t)
		}
	}
	return out, nil
}

// whole returns every task of tbl's current snapshot, planned now or
// before; false when the snapshot has more files than the plans may
// keep (or does not say how many).
func (ps *plans) whole(ctx context.Context, tbl *table.Table, opts []table.ScanOption) ([]table.FileScanTask, bool, error) {
	if ps == nil {
		return nil, false, nil
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return nil, false, nil
	}
	n, err := strconv.Atoi(snap.Summary.Properties["total-data-files"])
	if err != nil || n > ps.max {
		return nil, false, nil
	}
	key := tbl.MetadataLocation()
	ps.mu.Lock()
	all, ok := ps.bySnap[key]
	ps.mu.Unlock()
	if ok {
		return all, true, nil
	}
	plan := tbl.Scan(opts...)
	defer plan.Close()
	all, err = plan.PlanFiles(ctx)
	if err != nil {
		return nil, false, err
	}
	for i := range all {
		// Each scan's own filter applies when a file is read through
		// iceberg-go (ReadTasks): no residual of the plan without one.
		all[i].Residual = nil
	}
	ps.made.Add(1)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(all) > ps.max {
		return all, true, nil // more tasks than files (split): used once, not kept
	}
	if ps.files+len(all) > ps.max {
		clear(ps.bySnap) // the oldest plans are most likely superseded
		ps.files = 0
	}
	if _, ok := ps.bySnap[key]; !ok {
		ps.bySnap[key] = all
		ps.files += len(all)
	}
	return all, true, nil
}

// fileBounds are a data file's partition and offset bounds (inclusive)
// from its manifest entry.
type fileBounds struct {
	plo, phi int32
	flo, fhi int64
	parts    bool // plo, phi known
	offs     bool // flo, fhi known
}

// scanBounds is what a scan reads: offsets [lo, hi) of partition part,
// of every partition when anyPart.
type scanBounds struct {
	part    int32
	anyPart bool
	lo, hi  int64
}

// boundsOf returns f's bounds.
func boundsOf(f icego.DataFile) fileBounds {
	var b fileBounds
	b.flo, b.fhi, b.offs = offsetBounds(f)
	l, lok := f.LowerBoundValues()[partitionFieldID]
	h, hok := f.UpperBoundValues()[partitionFieldID]
	if lok && hok && len(l) == 4 && len(h) == 4 {
		b.plo, b.phi, b.parts = int32(binary.LittleEndian.Uint32(l)), int32(binary.LittleEndian.Uint32(h)), true
	}
	return b
}

// mayHold reports whether a file of bounds f may hold a row of scan s:
// what it does not know of f, it assumes it may.
func mayHold(f fileBounds, s scanBounds) bool {
	if s.lo >= s.hi {
		return false
	}
	if f.offs && (f.fhi < s.lo || f.flo >= s.hi) {
		return false
	}
	if !s.anyPart && f.parts && (s.part < f.plo || s.part > f.phi) {
		return false
	}
	return true
}
