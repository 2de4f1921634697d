package compactor

import (
	"time"

	"github.com/floe-broker/floe/metadata"
)

// The decisions of keyed compaction, free of I/O so that they are
// table-tested.

// keyedRecord is a record of a compaction section as the decision sees it.
type keyedRecord struct {
	Offset     int64
	Key        []byte // nil: a record without key, never removed
	Tombstone  bool   // a null value
	AppendTime int64  // its batch's append time, unix ms (the store's clock)
}

// latestByKey returns, for each key of recs, the offset of its latest
// record.
func latestByKey(recs []keyedRecord) map[string]int64 {
	latest := make(map[string]int64, len(recs))
	for _, r := range recs {
		if r.Key != nil {
			latest[string(r.Key)] = max(latest[string(r.Key)], r.Offset)
		}
	}
	return latest
}

// survives reports whether keyed compaction keeps r: a record without key
// (Kafka refuses them on compacted topics; floe keeps them), or the latest
// record of its key, unless that is a tombstone appended deleteRetention
// or more before now (unix ms).
func survives(r keyedRecord, latest map[string]int64, now int64, deleteRetention time.Duration) bool {
	if r.Key == nil {
		return true
	}
	if off, ok := latest[string(r.Key)]; ok && off > r.Offset {
		return false
	}
	return !r.Tombstone || now-r.AppendTime < deleteRetention.Milliseconds()
}

// tombstoneDue returns when (unix ms) the earliest surviving tombstone of
// recs expires, 0 if none survives: a partition whose section did not
// change need not be read again before.
func tombstoneDue(recs []keyedRecord, latest map[string]int64, now int64, deleteRetention time.Duration) int64 {
	var due int64
	for _, r := range recs {
		if r.Tombstone && r.Key != nil && survives(r, latest, now, deleteRetention) {
			at := r.AppendTime + deleteRetention.Milliseconds()
			if due == 0 || at < due {
				due = at
			}
		}
	}
	return due
}

// keyedState is what the last pass saw of a partition.
type keyedState struct {
	logStart, hw int64
	// due: unix ms (the store's clock) when the section may change
	// without a new batch (a kept tombstone expires, a batch the lag held
	// back ages past it); 0 none.
	due   int64
	cut   bool // the byte budget cut the section: read from the log start every pass
	again bool // the pass rewrote the section: read it again
}

// compactDue reports whether keyed compaction reads a partition of state
// st at nowMs (unix ms, the store's clock), given what the last pass saw
// of it (prev; seen false: nothing). A partition without records is never
// read; one unchanged since its last pass only once something is due.
func compactDue(prev keyedState, seen bool, st metadata.PartitionState, nowMs int64) bool {
	switch {
	case st.LogStartOffset >= st.HighWatermark:
		return false
	case !seen || prev.cut || prev.again:
		return true
	case st.LogStartOffset != prev.logStart || st.HighWatermark != prev.hw:
		return true
	}
	return prev.due > 0 && nowMs >= prev.due
}

// earliestDue is the earlier of two due times (0: none).
func earliestDue(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// renewDue reports whether a job renews its lease (ttl long), last
// renewed at last, at now: after a quarter of it, so that a pass of many
// cheap steps renews a few times, not once per step.
func renewDue(last, now time.Time, ttl time.Duration) bool {
	return now.Sub(last) >= ttl/4 || now.Before(last)
}
