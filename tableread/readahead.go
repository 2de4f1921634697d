package tableread

import (
	"math"
	"sort"
	"sync"
	"time"
)

// The read-ahead: a scan of the table decodes whole row groups whatever
// its window (a group holds many partitions' offsets), so a read scans a
// window of WindowBytes (more than one answer's budget) and keeps the
// rows beyond what it returned for the partition's next read, within
// ReadaheadBytes across all partitions (the oldest kept go first). A
// reader catching up then costs one scan per window, not one per answer.
// The rows a scan decodes of the other partitions extend what they have
// kept when they follow on from it (putAhead): partitions catching up
// together then share every scan, not only the first (each went on to
// scan the whole table for itself before).

// aheadKey names a partition of a topic.
type aheadKey struct {
	topic string
	part  int32
}

// ahead is what a scan read of a partition: every row of [lo, hi).
type ahead struct {
	lo, hi int64
	rows   []row // sorted by offset; never written once kept
	bytes  int64
	at     time.Time
	pos    int64 // the furthest offset a read took from (rows below it are read)
}

// readahead holds the kept rows.
type readahead struct {
	max int64         // ReadaheadBytes; 0: off
	ttl time.Duration // rows older than this are not served

	mu    sync.Mutex // protects byKey and total
	byKey map[aheadKey]*ahead
	total int64
}

func newReadahead(maxBytes int64, ttl time.Duration) *readahead {
	return &readahead{max: maxBytes, ttl: ttl, byKey: map[aheadKey]*ahead{}}
}

// take returns the kept rows of k from offset from below end, and the
// offset up to which the kept rows cover the partition (from when none
// cover it: the caller scans from there).
func (ra *readahead) take(k aheadKey, from, end int64) ([]row, int64) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	a, ok := ra.byKey[k]
	if !ok || from < a.lo || from >= a.hi || time.Since(a.at) > ra.ttl {
		return nil, from
	}
	i := sort.Search(len(a.rows), func(i int) bool { return a.rows[i].rec.Offset >= from })
	j := sort.Search(len(a.rows), func(i int) bool { return a.rows[i].rec.Offset >= end })
	if j < i {
		j = i
	}
	a.pos = max(a.pos, from)
	return a.rows[i:j], min(a.hi, end)
}

// putAhead keeps rows, every row of k in [lo, hi), that a scan for
// another partition decoded: in place of k's kept rows when those no
// longer serve or the new ones start at or before where k's reader is;
// appended to them when they follow on (k's kept rows reach lo), the
// rows k's reader has passed left out; not at all when k's kept rows
// reach past hi already or end short of lo (a reader elsewhere).
func (ra *readahead) putAhead(k aheadKey, lo, hi int64, rows []row) {
	ra.mu.Lock()
	a, ok := ra.byKey[k]
	if ok && time.Since(a.at) <= ra.ttl {
		if a.hi < lo || hi <= a.hi {
			ra.mu.Unlock()
			return
		}
		if from := max(a.lo, a.pos); from < lo {
			i := sort.Search(len(a.rows), func(i int) bool { return a.rows[i].rec.Offset >= from })
			j := sort.Search(len(a.rows), func(i int) bool { return a.rows[i].rec.Offset >= lo })
			merged := make([]row, 0, max(0, j-i)+len(rows))
			if j > i {
				merged = append(merged, a.rows[i:j]...)
			}
			rows, lo = append(merged, rows...), from
		}
	}
	ra.mu.Unlock()
	// The scans of a topic's table are one at a time (Reader.stripes):
	// no other put of k runs in between.
	ra.put(k, lo, hi, rows)
}

// floor is the offset from which rows of k that a scan from lo decodes
// for it would be kept (putAhead): where its fresh kept rows end, or
// math.MaxInt64 when they end short of lo (none would be), or
// math.MinInt64 when it has none.
func (ra *readahead) floor(k aheadKey, lo int64) int64 {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	a, ok := ra.byKey[k]
	switch {
	case !ok || time.Since(a.at) > ra.ttl:
		return math.MinInt64
	case a.hi < lo:
		return math.MaxInt64
	}
	return a.hi
}

// put keeps rows, every row of k in [lo, hi), if they fit.
func (ra *readahead) put(k aheadKey, lo, hi int64, rows []row) {
	var n int64
	for i := range rows {
		n += int64(rows[i].size())
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if old, ok := ra.byKey[k]; ok {
		ra.total -= old.bytes
		delete(ra.byKey, k)
	}
	if n > ra.max {
		return
	}
	for ra.total+n > ra.max {
		oldest := leastRecent(ra.byKey, func(a *ahead) time.Time { return a.at })
		ra.total -= ra.byKey[oldest].bytes
		delete(ra.byKey, oldest)
	}
	ra.byKey[k] = &ahead{lo: lo, hi: hi, rows: rows, bytes: n, at: time.Now()}
	ra.total += n
}

// held returns the bytes kept (tests).
func (ra *readahead) held() int64 {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return ra.total
}
