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
// metadata store's clock: batches older than iceberg.lag), cut once their
// bytes reach budget (at least one batch is taken when the first is old
// enough and budget > 0, so that a batch larger than the budget still
// moves). It returns how many it takes and the watermark after them
// (start when it takes none). Batches wholly below start (a FindBatches
// of an offset inside a batch returns that batch) count as taken.
func icebergTake(batches []metadata.BatchRef, start, cutoffMs, budget int64) (n int, next int64, bytes int64) {
	next = start
	for _, b := range batches {
		if b.LogAppendTime > cutoffMs || budget <= 0 || (n > 0 && bytes+b.ByteLength > budget) {
			break
		}
		n++
		bytes += b.ByteLength
		next = max(next, b.LastOffset+1)
	}
	return n, next, bytes
}
