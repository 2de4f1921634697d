package compactor

import "github.com/floe-broker/floe/metadata"

// The decisions of the retention job's incremental look at partitions
// (jobs.go), free of I/O. How far a log start moves is the metadata's
// rule (metadata.RetentionRule); these decide only which partitions a
// pass asks the store to look at, from what the last look found.

// partRetention is what the retention job last learnt of a partition.
type partRetention struct {
	logStart, hw int64
	hold         int64 // its hold then (-1: none)
	// dueMs: unix ms (the store's clock) when time retention may move it
	// without a new batch; 0: not before one.
	dueMs int64
	// keptBytes bounds the bytes of its batches from logStart below hw;
	// -1: not counted.
	keptBytes int64
}

// topicRetention is what the retention job learnt of a topic's
// partitions under its retention.ms and retention.bytes.
type topicRetention struct {
	ms, bytes int64
	parts     map[int32]partRetention
}

// holdOf is a partition's hold, -1 for none (a nil hold).
func holdOf(hold map[int32]int64, p int32) int64 {
	if hold == nil {
		return -1
	}
	return hold[p]
}

// retentionDue reports whether a retention pass at nowMs looks at a
// partition of state st under r, given what the last look learnt (prev;
// seen false: nothing): never at one without records; else when it was
// never looked at, its log start or hold changed, time retention is due
// (dueMs), or, with a size limit, batches came (its high watermark
// moved). An idle partition is not looked at.
func retentionDue(prev partRetention, seen bool, st metadata.PartitionState, r metadata.Retention, nowMs int64) bool {
	switch {
	case st.LogStartOffset >= st.HighWatermark:
		return false
	case !seen || st.LogStartOffset != prev.logStart || holdOf(r.Hold, st.Partition) != prev.hold:
		return true
	case r.Ms >= 0 && prev.dueMs > 0 && nowMs >= prev.dueMs:
		return true
	}
	return r.Bytes >= 0 && st.HighWatermark != prev.hw
}

// retentionKnown is what a look at a partition passes the store of its
// bytes: prev's count when it has one.
func retentionKnown(prev partRetention, seen bool, p int32) metadata.RetentionKnown {
	if !seen || prev.keptBytes < 0 {
		return metadata.RetentionKnown{Partition: p, HighWatermark: -1}
	}
	return metadata.RetentionKnown{Partition: p, HighWatermark: prev.hw, Bytes: prev.keptBytes}
}

// learnRetention is what a look (check) at a partition under r at nowMs
// teaches: when time retention is due next (at once when its scan was
// cut; when the first batch it kept expires; else not before a new
// batch) and the bytes it counted.
func learnRetention(ch metadata.RetentionCheck, r metadata.Retention, nowMs int64) partRetention {
	pr := partRetention{logStart: ch.State.LogStartOffset, hw: ch.State.HighWatermark,
		hold: holdOf(r.Hold, ch.State.Partition), keptBytes: ch.KeptBytes}
	switch {
	case r.Ms < 0:
	case ch.Cut:
		pr.dueMs = nowMs
	case ch.YoungMs > 0:
		pr.dueMs = ch.YoungMs + r.Ms
	}
	return pr
}
