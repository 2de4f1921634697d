package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// What a failed produce left behind. gRPC itself answers Unavailable when
// the connection breaks mid-request, whether or not the agent committed;
// only floe's own Unavailable, which carries an ErrorInfo reason
// (NOT_COMMITTED, SHUTTING_DOWN, STORE_UNAVAILABLE), says nothing was
// committed.

// ErrOutcomeUnknown: the request may or may not have been committed (its
// stream or connection ended before the answer).
var ErrOutcomeUnknown = errors.New("client: produce outcome unknown: it may or may not have been committed")

// NotCommitted reports whether err is floe's answer that nothing of the
// request was committed, so that a retry cannot store it twice:
// Unavailable with floe's reason NOT_COMMITTED, SHUTTING_DOWN or
// STORE_UNAVAILABLE, or
// ResourceExhausted (the agent refused it: backpressure or a limit).
func NotCommitted(err error) bool {
	if errors.Is(err, ErrOutcomeUnknown) {
		return false
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.ResourceExhausted:
		return true
	case codes.Unavailable:
		r := floeReason(st)
		return r == "NOT_COMMITTED" || r == "SHUTTING_DOWN" || r == "STORE_UNAVAILABLE"
	}
	return false
}

// OutcomeUnknown reports whether a produce that failed with err may or
// may not have been committed: floe's OUTCOME_UNKNOWN, a transport
// failure (Unavailable without floe's reason), a deadline, a
// cancellation, or a stream that ended before its answer. An idempotent
// producer's retry is safe then; a plain producer's may duplicate.
func OutcomeUnknown(err error) bool {
	if err == nil || NotCommitted(err) {
		return false
	}
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unknown, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal, codes.Aborted:
		return true
	}
	return false
}

// floeReason is the reason of st's floe ErrorInfo, "" if none.
func floeReason(st *status.Status) string {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == "floe" {
			return ei.GetReason()
		}
	}
	return ""
}
