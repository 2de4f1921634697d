package group

import (
	"fmt"

	"github.com/floe-broker/floe/metadata"
)

// ValidateCommit checks a CommitOffsetsRequest before any I/O.
func ValidateCommit(req metadata.CommitOffsetsRequest) error {
	if err := ValidateName("group", req.Group); err != nil {
		return err
	}
	if req.MemberID != "" {
		if err := ValidateName("member id", req.MemberID); err != nil {
			return err
		}
	}
	seen := make(map[TP]bool, len(req.Offsets))
	for _, o := range req.Offsets {
		p := TP{TopicID: o.TopicID, Partition: o.Partition}
		switch {
		case o.Offset < 0:
			return fmt.Errorf("%w: offset %d of %d/%d is negative", metadata.ErrInvalidGroup, o.Offset, o.TopicID, o.Partition)
		case seen[p]:
			return fmt.Errorf("%w: partition %d/%d given twice", metadata.ErrInvalidGroup, o.TopicID, o.Partition)
		case len(o.Metadata) > 4096:
			return fmt.Errorf("%w: metadata of %d/%d is %d bytes, over 4096", metadata.ErrInvalidGroup, o.TopicID, o.Partition, len(o.Metadata))
		}
		seen[p] = true
	}
	return nil
}

// ValidateReset checks a ResetOffsetsRequest before any I/O.
func ValidateReset(req metadata.ResetOffsetsRequest) error {
	if err := ValidateName("group", req.Group); err != nil {
		return err
	}
	if req.Spec < metadata.ResetEarliest || req.Spec > metadata.ResetShift {
		return fmt.Errorf("%w: unknown reset spec %d", metadata.ErrInvalidGroup, req.Spec)
	}
	if req.Spec == metadata.ResetOffset && req.Offset < 0 {
		return fmt.Errorf("%w: reset to negative offset %d", metadata.ErrInvalidGroup, req.Offset)
	}
	return nil
}

// ResetTo computes a partition's new position. previous is the committed
// offset (-1 if none); atTimestamp is ListOffset(OffsetTimestamp) for
// ResetTimestamp. The result is within [log start, high watermark].
func ResetTo(req metadata.ResetOffsetsRequest, st metadata.PartitionState, previous, atTimestamp int64) int64 {
	var off int64
	switch req.Spec {
	case metadata.ResetEarliest:
		off = st.LogStartOffset
	case metadata.ResetLatest:
		off = st.HighWatermark
	case metadata.ResetTimestamp:
		off = atTimestamp
	case metadata.ResetOffset:
		off = req.Offset
	case metadata.ResetShift:
		from := previous
		if from < 0 {
			from = st.LogStartOffset
		}
		off = from + req.Shift
	}
	return min(max(off, st.LogStartOffset), st.HighWatermark)
}
