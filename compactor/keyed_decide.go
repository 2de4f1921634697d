package compactor

import "time"

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
