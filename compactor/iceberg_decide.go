package compactor

import "github.com/floe-broker/floe/metadata"

// The decisions of the Iceberg job (iceberg.go), free of I/O.

// icebergStart is the offset of a partition the table's next append starts
// at: the table's watermark, or the log start when retention (or
// DeleteRecords, or a table enabled late) already moved past it: those
// records are no longer in the log and the table skips them.
func icebergStart(watermark, logStart int64) int64 { return max(watermark, logStart) }

// icebergTake picks, from a partition's batches in offset order (the
// ones FindBatches returned from start on), those the table appends now:
// the leading run appended at or before cutoffMs (unix ms, by the
// metadata store's clock: batches older than iceberg.lag) whose bytes fit
// in budget, what is left of the table's iceberg.max_bytes for this pass.
// first says nothing was taken in this pass yet: then one batch is taken
// even when it alone exceeds the budget, so that a batch larger than
// iceberg.max_bytes still moves (alone in its pass). It returns how many
// it takes, the watermark after them (start when it takes none), their
// bytes, and cut: the budget stopped it before a batch old enough (the
// pass is full). Batches wholly below start (a FindBatches of an offset
// inside a batch returns that batch) count as taken.
func icebergTake(batches []metadata.BatchRef, start, cutoffMs, budget int64, first bool) (n int, next, bytes int64, cut bool) {
	next = start
	for _, b := range batches {
		if b.LogAppendTime > cutoffMs {
			break
		}
		if bytes+b.ByteLength > budget && !(first && n == 0) {
			return n, next, bytes, true
		}
		n++
		bytes += b.ByteLength
		next = max(next, b.LastOffset+1)
	}
	return n, next, bytes, false
}
