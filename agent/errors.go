package agent

import (
	"context"
	"errors"

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
	var oor *metadata.OffsetOutOfRangeError
	switch {
	case errors.As(err, &oor):
		return status.Error(codes.OutOfRange, oor.Error())
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
	var fe *batcher.FlushError
	if errors.As(err, &fe) {
		return status.Error(codes.Unavailable, err.Error())
	}
	if errors.Is(err, objectstore.ErrNotFound) {
		// A file the metadata references is missing: a serious fault, but
		// possibly a retention race; let the client retry.
		return status.Error(codes.Unavailable, err.Error())
	}
	// Store and network failures are transient from the client's view.
	return status.Error(codes.Unavailable, err.Error())
}
