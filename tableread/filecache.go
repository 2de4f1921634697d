package tableread

import (
	"sync"
	"time"
)

// The decoded files: a data file read without the row filter (one row
// group, or wholly inside a scan's range) is decoded whole whatever the
// window; its rows, every partition's, are kept by path (a data file is
// never rewritten in place) so that the next scans that need it, of the
// same partitions' next windows or of the others', take them instead of
// decoding the file again. The compactor's files span every
// partition's offsets of its pass, so neighbouring windows of different
// partitions need the same files: without this each was decoded once
// per scan that touched it (three times over in a 200 MB catch-up of
// four partitions). Bounded by ReadaheadBytes of rows, the least
// recently used files going first; a file larger than that is not kept.

// fileCache keeps decoded files' rows.
type fileCache struct {
	max int64 // 0: off

	mu     sync.Mutex // protects byPath and total
	byPath map[string]*fileRows
	total  int64
}

// fileRows are a file's rows in file order (never written once kept).
type fileRows struct {
	rows  []row
	bytes int64
	used  time.Time
}

func newFileCache(maxBytes int64) *fileCache {
	return &fileCache{max: maxBytes, byPath: map[string]*fileRows{}}
}

// on reports whether c keeps files.
func (c *fileCache) on() bool { return c != nil && c.max > 0 }

// get returns path's rows when kept.
func (c *fileCache) get(path string) ([]row, bool) {
	if c == nil || c.max <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.byPath[path]
	if !ok {
		return nil, false
	}
	f.used = time.Now()
	return f.rows, true
}

// put keeps rows, every row of the file at path, if they fit.
func (c *fileCache) put(path string, rows []row) {
	if c == nil || c.max <= 0 {
		return
	}
	var n int64
	for i := range rows {
		n += int64(rows[i].size())
	}
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byPath[path]; ok {
		c.total -= old.bytes
		delete(c.byPath, path)
	}
	for c.total+n > c.max {
		oldest := leastRecent(c.byPath, func(f *fileRows) time.Time { return f.used })
		c.total -= c.byPath[oldest].bytes
		delete(c.byPath, oldest)
	}
	c.byPath[path] = &fileRows{rows: rows, bytes: n, used: time.Now()}
	c.total += n
}

// held is the bytes of rows kept (tests).
func (c *fileCache) held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// leastRecent is the key of m's entry used longest ago (m not empty): the
// eviction of both the kept files and the read-ahead windows.
func leastRecent[K comparable, V any](m map[K]V, used func(V) time.Time) K {
	var (
		oldest K
		at     time.Time
	)
	for k, v := range m {
		if t := used(v); at.IsZero() || t.Before(at) {
			oldest, at = k, t
		}
	}
	return oldest
}
