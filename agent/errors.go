package agent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"syscall"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/readpath"
)

// ErrorInfo reasons (domain "floe") that clients may act on.
const (
	// ReasonOutcomeUnknown (Unknown): the records may or may not be
	// committed. An idempotent producer's retry is safe (it gets the
	// original offsets); a plain retry may duplicate them.
	ReasonOutcomeUnknown = "OUTCOME_UNKNOWN"
	// ReasonNotCommitted (Unavailable): nothing of the request was
	// committed; retry safely.
	ReasonNotCommitted = "NOT_COMMITTED"
	// ReasonStoreUnavailable (Unavailable): the metadata or object store
	// cannot be reached; retry later.
	ReasonStoreUnavailable = "STORE_UNAVAILABLE"
	// ReasonShuttingDown (Unavailable): the agent is closing; retry, on
	// another agent if there is one.
	ReasonShuttingDown = "SHUTTING_DOWN"
	// ReasonInternal (Internal): a fault in the agent; do not retry blindly.
	ReasonInternal = "INTERNAL"
	// ReasonDataLoss (DataLoss): stored data does not decode or does not
	// match its metadata.
	ReasonDataLoss = "DATA_LOSS"
	// ReasonUnknownProducer (FailedPrecondition): the producer id was never
	// issued by InitProducer; call InitProducer.
	ReasonUnknownProducer = "UNKNOWN_PRODUCER_ID"
	// ReasonProducerFenced (FailedPrecondition): a newer epoch of the
	// producer exists.
	ReasonProducerFenced = "PRODUCER_FENCED"
	// ReasonOutOfOrderSequence (FailedPrecondition): the base sequence is
	// not the next one expected.
	ReasonOutOfOrderSequence = "OUT_OF_ORDER_SEQUENCE"
	// ReasonRequestTooLarge (InvalidArgument): the request is over the
	// agent's request limit; split it.
	ReasonRequestTooLarge = "REQUEST_TOO_LARGE"
	// ReasonRecordTooLarge (InvalidArgument): a record is over the agent's
	// record limit.
	ReasonRecordTooLarge = "RECORD_TOO_LARGE"
	// ReasonBatchTooLarge (InvalidArgument): a stored batch decompresses
	// past the agent's limit and cannot be served.
	ReasonBatchTooLarge = "BATCH_TOO_LARGE"
	// ReasonInvalidBatch (InvalidArgument): a record batch sent to
	// ProduceBatches is malformed or not accepted (kbatch.Validate); the
	// message and the ErrorInfo metadata (partition, batch) name it.
	ReasonInvalidBatch = "INVALID_BATCH"
	// ReasonStaleMemberEpoch (FailedPrecondition): a group commit or
	// heartbeat with an epoch that is not the member's current one (a
	// zombie); heartbeat to learn the epoch, or rejoin.
	ReasonStaleMemberEpoch = "STALE_MEMBER_EPOCH"
	// ReasonUnknownMember (FailedPrecondition): not a member of the group
	// (left, or fenced after its session timed out); rejoin with epoch 0.
	ReasonUnknownMember = "UNKNOWN_MEMBER_ID"
	// ReasonNotPartitionOwner (FailedPrecondition): a commit for a
	// partition the member does not own.
	ReasonNotPartitionOwner = "NOT_PARTITION_OWNER"
	// ReasonGroupNotEmpty (FailedPrecondition): the operation needs a group
	// without live members (delete, reset without force, a member-less
	// commit).
	ReasonGroupNotEmpty = "GROUP_NOT_EMPTY"
	// ReasonInvalidValue (InvalidArgument): a record's value does not
	// conform to the topic's value.schema; the metadata names the record
	// (its index in the request) and the failing path.
	ReasonInvalidValue = "INVALID_VALUE"
)

// errorDomain is the ErrorInfo domain of floe's reasons.
const errorDomain = "floe"

// serverError is a failure on the agent's side (a store, the network, a
// bug). The client is told its code and msg, never the cause, which the
// gRPC interceptors log once with the request id they add to the message.
type serverError struct {
	code   codes.Code
	reason string
	msg    string // what the client is told
	err    error  // the cause: logged, never sent
}

func (e *serverError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *serverError) Unwrap() error { return e.err }

// GRPCStatus is the client's view without a request id: even a server
// without the interceptors sends no internal detail.
func (e *serverError) GRPCStatus() *status.Status {
	return withInfo(status.New(e.code, e.msg), e.reason, nil)
}

// toStatus maps an internal error to a gRPC status a client can act on:
// a status error for client errors (with their message) and a
// *serverError for failures on the agent's side.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var se *serverError
	if errors.As(err, &se) {
		return se
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
		// Checked first: a flush that failed on a deadline is still a store
		// failure, not the caller's deadline.
		switch {
		case fe.Ambiguous:
			return &serverError{codes.Unknown, ReasonOutcomeUnknown,
				"produce: outcome unknown: the records may or may not be committed; " +
					"an idempotent producer's retry is safe (it gets the original offsets), a plain retry may duplicate them", err}
		case errors.Is(err, metadata.ErrInvalidCommit):
			return &serverError{codes.Internal, ReasonInternal, "produce: internal error, the records were not committed", err}
		}
		return &serverError{codes.Unavailable, ReasonNotCommitted,
			"produce: the records were not committed (storage failed); retry safely", err}
	case errors.Is(err, kbatch.ErrTooLarge):
		// Checked before data loss: the batch is intact, only too big for
		// this agent's decompression limit.
		return statusInfo(codes.InvalidArgument, ReasonBatchTooLarge, nil,
			"read: a stored batch cannot be served: %s", innermostText(err, kbatch.ErrTooLarge))
	case errors.Is(err, kbatch.ErrRecordTooLarge):
		// On read: a stored record over the agent's read bound
		// (MaxReadRecordBytes); produce paths name their own limit.
		return statusInfo(codes.InvalidArgument, ReasonBatchTooLarge, map[string]string{"limit": "max_read_record_bytes"},
			"read: a stored batch cannot be served: %s (max_read_record_bytes; the batch data plane serves it)", innermostText(err, kbatch.ErrRecordTooLarge))
	case errors.As(err, &dl):
		return &serverError{codes.DataLoss, ReasonDataLoss,
			"read: stored data does not decode or does not match its metadata", err}
	case errors.As(err, &oor):
		return outOfRange(oor)
	case errors.Is(err, metadata.ErrTopicNotFound), errors.Is(err, metadata.ErrPartitionNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, metadata.ErrTopicExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, metadata.ErrInvalidTopicName), errors.Is(err, metadata.ErrInvalidPartitions),
		errors.Is(err, batcher.ErrBatchTooLarge), errors.Is(err, kbatch.ErrCorrupt),
		errors.Is(err, metadata.ErrInvalidConfig), errors.Is(err, metadata.ErrInvalidDeleteOffset):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, metadata.ErrUnknownProducer):
		return statusInfo(codes.FailedPrecondition, ReasonUnknownProducer, nil,
			"produce: %v: it was never issued by InitProducer; call InitProducer for a producer id", err)
	case errors.Is(err, metadata.ErrProducerFenced):
		return statusInfo(codes.FailedPrecondition, ReasonProducerFenced, nil, "produce: %v", err)
	case errors.Is(err, metadata.ErrOutOfOrderSequence):
		return statusInfo(codes.FailedPrecondition, ReasonOutOfOrderSequence, nil, "produce: %v", err)
	case errors.Is(err, metadata.ErrStaleMemberEpoch):
		return statusInfo(codes.FailedPrecondition, ReasonStaleMemberEpoch, nil, "group: %v", err)
	case errors.Is(err, metadata.ErrUnknownMember):
		return statusInfo(codes.FailedPrecondition, ReasonUnknownMember, nil, "group: %v", err)
	case errors.Is(err, metadata.ErrNotPartitionOwner):
		return statusInfo(codes.FailedPrecondition, ReasonNotPartitionOwner, nil, "group: %v", err)
	case errors.Is(err, metadata.ErrGroupNotEmpty):
		return statusInfo(codes.FailedPrecondition, ReasonGroupNotEmpty, nil, "group: %v", err)
	case errors.Is(err, metadata.ErrGroupNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, metadata.ErrInvalidGroup):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, batcher.ErrBackpressure):
		return status.Error(codes.ResourceExhausted, "produce: agent buffer full, retry later")
	case errors.Is(err, batcher.ErrClosed), errors.Is(err, metadata.ErrClosed):
		return &serverError{codes.Unavailable, ReasonShuttingDown, "the agent is shutting down; retry, on another agent if there is one", err}
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case isStoreFailure(err):
		return &serverError{codes.Unavailable, ReasonStoreUnavailable,
			"the agent cannot reach its metadata or object store; retry later", err}
	}
	return &serverError{codes.Internal, ReasonInternal, "internal error in the agent", err}
}

// objectStoreError marks an error from the object store: its contract
// makes every failure transient from the client's view (a missing object
// referenced by the metadata is possibly a retention race).
type objectStoreError struct{ err error }

func (e *objectStoreError) Error() string { return e.err.Error() }
func (e *objectStoreError) Unwrap() error { return e.err }

// markedReader marks the errors of an ObjectReader as object store errors.
// It embeds the reader so that methods added to ObjectReader keep working.
type markedReader struct{ ObjectReader }

func (r markedReader) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	b, err := r.ObjectReader.Get(ctx, key, off, length)
	if err != nil && ctx.Err() == nil {
		return nil, &objectStoreError{err}
	}
	return b, err
}

// isStoreFailure reports whether err is a failure to reach or use a store
// that a later retry may not meet: object store errors, metadata errors
// that never reached the store, network and connection failures, and
// database errors of the classes that mean "not now" (connection
// exception 08, transaction rollback 40, insufficient resources 53,
// operator intervention 57, system error 58; SQLite busy, locked, I/O).
// Anything else is a fault in the agent (Internal).
func isStoreFailure(err error) bool {
	var (
		ose  *objectStoreError
		perm *objectstore.PermanentError
		ne   net.Error
		pe   *fs.PathError
		sqls interface{ SQLState() string }
		rt   interface{ SafeToRetry() bool }
		lite interface{ Code() int }
	)
	switch {
	case errors.As(err, &ose), errors.As(err, &perm), errors.Is(err, objectstore.ErrNotFound), errors.Is(err, objectstore.ErrInjected),
		errors.Is(err, metadata.ErrNotApplied), errors.As(err, &ne), errors.As(err, &pe), errors.Is(err, net.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &sqls):
		switch c := sqls.SQLState(); {
		case len(c) == 5 && strings.Contains("|08|40|53|57|58|", "|"+c[:2]+"|"):
			return true
		}
	case errors.As(err, &rt) && rt.SafeToRetry():
		return true
	case errors.As(err, &lite):
		switch lite.Code() & 0xff {
		case 5, 6, 10, 13, 14: // SQLITE_BUSY, LOCKED, IOERR, FULL, CANTOPEN
			return true
		}
	}
	return false
}

// innermostText is the message of the deepest error in err's chain that
// still matches target (the one that says the most without the outer
// context, such as file keys), or target's message.
func innermostText(err, target error) string {
	text := target.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e != target && errors.Is(e, target) {
			text = e.Error()
		}
	}
	return text
}

// dataLossError marks stored data that does not decode or does not match
// its metadata: retrying will not help.
type dataLossError = readpath.DataLossError

// statusInfo is a status error with an ErrorInfo detail.
func statusInfo(c codes.Code, reason string, md map[string]string, format string, args ...any) error {
	return withInfo(status.Newf(c, format, args...), reason, md).Err()
}

// withInfo adds an ErrorInfo detail of floe's domain to st.
func withInfo(st *status.Status, reason string, md map[string]string) *status.Status {
	if reason == "" && md == nil {
		return st
	}
	d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain, Metadata: md})
	if err != nil {
		return st
	}
	return d
}

// outOfRange is an OutOfRange status that carries the valid range both in
// its message and, machine-readably, as an ErrorInfo detail with metadata
// log_start_offset and high_watermark.
func outOfRange(e *metadata.OffsetOutOfRangeError) error {
	return statusInfo(codes.OutOfRange, "OFFSET_OUT_OF_RANGE", map[string]string{
		"offset":           strconv.FormatInt(e.Offset, 10),
		"log_start_offset": strconv.FormatInt(e.LogStartOffset, 10),
		"high_watermark":   strconv.FormatInt(e.HighWatermark, 10),
	}, "%s", e.Error())
}
