// Package readpath is the agent's read path below its gRPC handlers: the
// read index (Index: recent batches and high watermarks, fed by commit
// notices), the read cache of whole files (Cache), the loader that reads
// the object store on cache misses within a memory bound (Loader), and
// the read-ahead for readers far behind the head (Readahead).
package readpath

import (
	"context"
	"time"
)

// ObjectReader reads byte ranges of object files (length < 0: to the end).
type ObjectReader interface {
	Get(ctx context.Context, key string, off, length int64) ([]byte, error)
}

// Key names one partition of a topic.
type Key struct {
	Topic int64
	Part  int32
}

// Config holds the read path's settings; the agent's Config documents and
// validates them.
type Config struct {
	CacheBytes        int64         // bound of the read cache; 0: off
	CacheFileMaxBytes int64         // files up to this size are loaded whole and cached
	LoadTimeout       time.Duration // bound of one whole-file load, range read or read-ahead GET
	MaxLoadingBytes   int64         // bytes being read from the object store at once
	MaxLoadWait       time.Duration // how long a read waits for MaxLoadingBytes to free
	ReadaheadBytes    int64         // bytes read ahead across all partitions; 0: off
}

// DataLossError marks stored data that does not decode or does not match
// its metadata.
type DataLossError struct{ Err error }

func (e *DataLossError) Error() string { return e.Err.Error() }
func (e *DataLossError) Unwrap() error { return e.Err }

// Readahead returns the loader's read-ahead (nil: off; its methods then
// read without it).
func (l *Loader) Readahead() *Readahead { return l.ra }

// Tune sets the read-ahead's minimum lag (bytes behind the head) and idle
// period (tests); call it before the agent serves reads.
func (ra *Readahead) Tune(minLag int64, idle time.Duration) {
	ra.minLag.Store(minLag)
	ra.mu.Lock()
	ra.idle = idle
	ra.mu.Unlock()
}

// Stats returns the read-ahead budget taken, the bytes readers took from
// it and its streams.
func (ra *Readahead) Stats() (held, served int64, streams int) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return ra.held, ra.served.Load(), len(ra.streams)
}
