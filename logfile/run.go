package logfile

import (
	"errors"
	"fmt"
	"sort"
)

// ErrRunMismatch is wrapped by CheckRun's error: the file's footer does
// not describe the run the metadata references (a swapped or rewritten
// object).
var ErrRunMismatch = errors.New("logfile: footer does not match the batch reference")

// Run is what the metadata says of a run of batches in a file: one
// partition's consecutive batches at [ByteOffset, ByteOffset+ByteLength),
// holding RecordCount records, the latest at MaxTimestamp.
type Run struct {
	TopicID      int64
	Partition    int32
	ByteOffset   int64
	ByteLength   int64
	RecordCount  int64
	MaxTimestamp int64
}

// CheckRun checks run against entries (a file's footer, as Footer or
// ReadIndex return it, in file order): the run's bytes must be exactly a
// sequence of whole entries, all of the run's topic and partition, whose
// record counts sum to the run's and whose latest timestamp is the run's.
// It costs O(log entries + entries of the run).
func CheckRun(entries []Entry, run Run) error {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].ByteOffset >= run.ByteOffset })
	if i == len(entries) || entries[i].ByteOffset != run.ByteOffset {
		return fmt.Errorf("%w: no batch starts at byte %d", ErrRunMismatch, run.ByteOffset)
	}
	end := run.ByteOffset + run.ByteLength
	var records int64
	maxTS := int64(-1 << 63)
	at := run.ByteOffset
	for ; i < len(entries) && at < end; i++ {
		e := entries[i]
		if e.TopicID != run.TopicID || e.Partition != run.Partition {
			return fmt.Errorf("%w: batch at byte %d is of topic %d partition %d, want topic %d partition %d",
				ErrRunMismatch, e.ByteOffset, e.TopicID, e.Partition, run.TopicID, run.Partition)
		}
		records += int64(e.RecordCount)
		maxTS = max(maxTS, e.MaxTimestamp)
		at = e.ByteOffset + e.ByteLength
	}
	switch {
	case at != end:
		return fmt.Errorf("%w: batches from byte %d end at %d, want %d", ErrRunMismatch, run.ByteOffset, at, end)
	case records != run.RecordCount:
		return fmt.Errorf("%w: batches at byte %d hold %d records, want %d", ErrRunMismatch, run.ByteOffset, records, run.RecordCount)
	case maxTS != run.MaxTimestamp:
		return fmt.Errorf("%w: batches at byte %d have max timestamp %d, want %d", ErrRunMismatch, run.ByteOffset, maxTS, run.MaxTimestamp)
	}
	return nil
}
