package agent

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// toStatus maps an internal error to a gRPC status a client can act on.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var (
		oor *metadata.OffsetOutOfRangeError
		fe  *batcher.FlushError
		dl  *dataLossError
	)
	switch {
	case errors.As(err, &fe):
		// Checked first: a flush that failed on a deadline is still a
		// retriable store failure, not the caller's deadline.
		return status.Error(codes.Unavailable, err.Error())
	case errors.As(err, &dl):
		return status.Error(codes.DataLoss, err.Error())
	case errors.As(err, &oor):
		return outOfRange(oor)
	case errors.Is(err, metadata.ErrTopicNotFound), errors.Is(err, metadata.ErrPartitionNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, metadata.ErrTopicExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, metadata.ErrInvalidTopicName), errors.Is(err, metadata.ErrInvalidPartitions),
		errors.Is(err, batcher.ErrBatchTooLarge), errors.Is(err, kbatch.ErrCorrupt):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, metadata.ErrOutOfOrderSequence), errors.Is(err, metadata.ErrProducerFenced):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, batcher.ErrBackpressure):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, batcher.ErrClosed), errors.Is(err, metadata.ErrClosed):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	if errors.Is(err, objectstore.ErrNotFound) {
		// A file the metadata references is missing: a serious fault, but
		// possibly a retention race; let the client retry.
		return status.Error(codes.Unavailable, err.Error())
	}
	// Store and network failures are transient from the client's view.
	return status.Error(codes.Unavailable, err.Error())
}

// dataLossError marks stored data that does not decode or does not match
// its metadata: retrying will not help.
type dataLossError struct{ err error }

func (e *dataLossError) Error() string { return e.err.Error() }
func (e *dataLossError) Unwrap() error { return e.err }

// outOfRange is an OutOfRange status that carries the valid range both in
// its message and, machine-readably, as an ErrorInfo detail with metadata
// log_start_offset and high_watermark.
func outOfRange(e *metadata.OffsetOutOfRangeError) error {
	st := status.New(codes.OutOfRange, e.Error())
	if d, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason: "OFFSET_OUT_OF_RANGE",
		Domain: "floe",
		Metadata: map[string]string{
			"offset":           strconv.FormatInt(e.Offset, 10),
			"log_start_offset": strconv.FormatInt(e.LogStartOffset, 10),
			"high_watermark":   strconv.FormatInt(e.HighWatermark, 10),
		},
	}); err == nil {
		st = d
	}
	return st.Err()
}
