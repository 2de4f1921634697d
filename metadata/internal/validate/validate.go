// Package validate holds the input checks and sequence arithmetic that
// every metadata backend shares, so that they refuse the same things.
package validate

import (
	"fmt"
	"math"

	"github.com/floe-broker/floe/metadata"
)

// TopicSpec checks a topic's name and partition count.
func TopicSpec(spec metadata.TopicSpec) error {
	if err := metadata.ValidateTopicName(spec.Name); err != nil {
		return err
	}
	if spec.Partitions < 1 || spec.Partitions > metadata.MaxPartitions {
		return fmt.Errorf("%w: %d, want 1 to %d", metadata.ErrInvalidPartitions, spec.Partitions, metadata.MaxPartitions)
	}
	return metadata.ValidateTopicConfig(spec.Config)
}

// Commit checks a file commit: a key, a size, at least one batch, and
// batches that hold records and lie inside the file.
func Commit(f metadata.FileCommit) error {
	if f.Key == "" {
		return fmt.Errorf("%w: empty key", metadata.ErrInvalidCommit)
	}
	if f.Size <= 0 {
		return fmt.Errorf("%w: file %s: size %d", metadata.ErrInvalidCommit, f.Key, f.Size)
	}
	if len(f.Batches) == 0 {
		return fmt.Errorf("%w: file %s: no batches", metadata.ErrInvalidCommit, f.Key)
	}
	for i, b := range f.Batches {
		switch {
		case b.RecordCount < 1:
			return fmt.Errorf("%w: file %s batch %d: record count %d", metadata.ErrInvalidCommit, f.Key, i, b.RecordCount)
		case b.ByteLength <= 0:
			return fmt.Errorf("%w: file %s batch %d: byte length %d", metadata.ErrInvalidCommit, f.Key, i, b.ByteLength)
		case b.ByteOffset < 0 || b.ByteOffset > f.Size-b.ByteLength:
			return fmt.Errorf("%w: file %s batch %d: bytes [%d, +%d) outside the file's %d", metadata.ErrInvalidCommit,
				f.Key, i, b.ByteOffset, b.ByteLength, f.Size)
		case b.Partition < 0:
			return fmt.Errorf("%w: file %s batch %d: partition %d", metadata.ErrInvalidCommit, f.Key, i, b.Partition)
		case b.BaseSequence < metadata.NoSequence:
			return fmt.Errorf("%w: file %s batch %d: base sequence %d", metadata.ErrInvalidCommit, f.Key, i, b.BaseSequence)
		case Idempotent(b) && b.ProducerEpoch < 0:
			return fmt.Errorf("%w: file %s batch %d: producer epoch %d", metadata.ErrInvalidCommit, f.Key, i, b.ProducerEpoch)
		}
	}
	return nil
}

// Idempotent reports whether b is checked for duplicates and order.
func Idempotent(b metadata.BatchCommit) bool {
	return b.ProducerID >= 0 && b.BaseSequence != metadata.NoSequence
}

// LastSequence is the sequence of the last record of a batch, wrapping
// past math.MaxInt32 to 0 as Kafka does.
func LastSequence(base, count int32) int32 {
	last := int64(base) + int64(count) - 1
	if last > math.MaxInt32 {
		last -= math.MaxInt32 + 1
	}
	return int32(last)
}

// NextSequence is the sequence expected after last.
func NextSequence(last int32) int32 {
	if last == math.MaxInt32 {
		return 0
	}
	return last + 1
}
