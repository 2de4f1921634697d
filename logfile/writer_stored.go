package logfile

import "github.com/floe-broker/floe/kbatch"

// AppendStored is Append for a batch read back from a file (the
// compactor's rewrites and merges): it validates it with
// kbatch.ParseStored, so that a batch of a compacted topic (fewer records
// than offsets) is accepted.
func (w *Writer) AppendStored(topicID int64, partition int32, batch []byte) (Entry, error) {
	return w.append(topicID, partition, batch, kbatch.ParseStored)
}
