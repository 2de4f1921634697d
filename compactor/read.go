package compactor

import (
	"context"
	"fmt"
	"sort"

	"github.com/floe-broker/floe/metadata"
)

// readSection returns the bytes of each batch row, reading only the rows'
// ranges: one range GET per run of adjacent rows of a file (rows of other
// partitions, or dead rows, between them are not read), so that what a
// job reads and holds is the bytes of the rows it takes.
func (c *Compactor) readSection(ctx context.Context, bs []metadata.CompactBatch) ([][]byte, error) {
	for _, b := range bs {
		if b.ByteOffset < 0 || b.ByteLength <= 0 || b.ByteOffset+b.ByteLength > b.FileSize {
			return nil, fmt.Errorf("file %s: batch [%d, +%d) outside its %d bytes", b.FileKey, b.ByteOffset, b.ByteLength, b.FileSize)
		}
	}
	out := make([][]byte, len(bs))
	for _, run := range byteRuns(bs) {
		d, err := c.store.Get(ctx, run.key, run.lo, run.hi-run.lo)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", run.key, err)
		}
		if int64(len(d)) != run.hi-run.lo {
			return nil, fmt.Errorf("read %s: %d bytes, want %d", run.key, len(d), run.hi-run.lo)
		}
		for _, i := range run.rows {
			lo := bs[i].ByteOffset - run.lo
			out[i] = d[lo : lo+bs[i].ByteLength : lo+bs[i].ByteLength]
		}
	}
	return out, nil
}

// byteRun is a range of a file covering adjacent (or overlapping) rows:
// rows are indexes into the slice given to byteRuns.
type byteRun struct {
	key    string
	lo, hi int64
	rows   []int
}

// byteRuns groups rows into the runs of adjacent bytes of each file, by
// key then offset: a gap between two rows starts a new run.
func byteRuns(bs []metadata.CompactBatch) []byteRun {
	idx := make([]int, len(bs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		x, y := bs[idx[a]], bs[idx[b]]
		if x.FileKey != y.FileKey {
			return x.FileKey < y.FileKey
		}
		return x.ByteOffset < y.ByteOffset
	})
	var runs []byteRun
	for _, i := range idx {
		b := bs[i]
		if n := len(runs); n > 0 && runs[n-1].key == b.FileKey && b.ByteOffset <= runs[n-1].hi {
			runs[n-1].hi = max(runs[n-1].hi, b.ByteOffset+b.ByteLength)
			runs[n-1].rows = append(runs[n-1].rows, i)
			continue
		}
		runs = append(runs, byteRun{key: b.FileKey, lo: b.ByteOffset, hi: b.ByteOffset + b.ByteLength, rows: []int{i}})
	}
	return runs
}
