package readpath

import (
	"math"

	"github.com/floe-broker/floe/metadata"
)

// The read-ahead's decisions (readahead.go), pure.

// behindBytes estimates the bytes between the end of refs and the high
// watermark hw, from the bytes per offset of refs.
func behindBytes(refs []metadata.BatchRef, hw int64) int64 {
	if len(refs) == 0 {
		return 0
	}
	end := refs[len(refs)-1].LastOffset + 1
	span := end - refs[0].BaseOffset
	if span <= 0 || hw <= end {
		return 0
	}
	var b int64
	for _, r := range refs {
		b += r.ByteLength
	}
	f := float64(hw-end) * float64(b) / float64(span)
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(f)
}

// readaheadWindow is how many bytes a stream keeps read ahead of a reader
// asking for maxBytes at a time, within a budget.
func readaheadWindow(maxBytes int, budget int64) int64 {
	return min(budget/4, max(3*int64(maxBytes), 4<<20))
}

// planSegments cuts refs (one partition, offset order) into ranged GETs:
// adjacent batches of one file (gap at most gap) go in one segment of at
// most segMax bytes (a batch larger than segMax gets its own).
func planSegments(refs []metadata.BatchRef, gap, segMax int64) []*raSeg {
	var out []*raSeg
	var cur *raSeg
	for _, r := range refs {
		if cur != nil && r.FileKey == cur.key && r.ByteOffset >= cur.off+cur.n && r.ByteOffset-(cur.off+cur.n) <= gap &&
			r.ByteOffset+r.ByteLength-cur.off <= segMax {
			cur.n = r.ByteOffset + r.ByteLength - cur.off
			cur.last = r.LastOffset
			continue
		}
		cur = &raSeg{key: r.FileKey, off: r.ByteOffset, n: r.ByteLength, first: r.BaseOffset, last: r.LastOffset, size: r.FileSize}
		out = append(out, cur)
	}
	return out
}

// DenseFile reports whether a file of size bytes, of which a stream's
// partition holds n, is loaded whole rather than by ranges, with readers
// catch-up readers of its topic on this agent: when those readers
// together likely want a quarter of it (each partition holding about as much)
// and it fits the cache (fileMax).
func DenseFile(n, size int64, readers int, fileMax int64) bool {
	return size > 0 && size <= fileMax && 4*n*int64(readers) >= size
}
