package agent

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// requestIDKey keys the request id in a context.
type requestIDKey struct{}

// withRequestID returns ctx carrying a new request id (16 hex digits).
func withRequestID(ctx context.Context) context.Context {
	var b [8]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return context.WithValue(ctx, requestIDKey{}, hex.EncodeToString(b[:]))
}

// RequestID returns the id the gRPC interceptors of GRPCServerOptions gave
// the call of ctx, or "" outside one.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// isServerCode reports whether c is a failure on the agent's side, whose
// cause the client is never told.
func isServerCode(c codes.Code) bool {
	switch c {
	case codes.Unavailable, codes.Internal, codes.Unknown, codes.DataLoss:
		return true
	}
	return false
}

// publicError is err as the client of rpc may see it. Client errors keep
// their messages. A failure on the agent's side becomes a generic message
// ending with the request id, which is also in an ErrorInfo detail (metadata
// "request_id"); the full error is logged once at ERROR with the same id and
// the RPC name. id is the request id ("" uses the context's).
func publicError(ctx context.Context, log *slog.Logger, rpc, id string, err error) error {
	if err == nil {
		return nil
	}
	err = toStatus(err)
	var se *serverError
	if !errors.As(err, &se) {
		st := status.Convert(err)
		if !isServerCode(st.Code()) {
			return err
		}
		// A status built elsewhere (by gRPC or a handler) with a server
		// code: its message may hold internal details.
		se = &serverError{code: st.Code(), reason: genericReason(st.Code()), msg: genericMessage(st.Code()), err: err}
	}
	if id == "" {
		id = RequestID(ctx)
	}
	if id == "" {
		id = RequestID(withRequestID(ctx))
	}
	log.LogAttrs(ctx, slog.LevelError, "rpc failed", slog.String("rpc", rpc), slog.String("request_id", id),
		slog.String("code", se.code.String()), slog.String("err", se.err.Error()))
	return withInfo(status.Newf(se.code, "%s (request id %s)", se.msg, id), se.reason, map[string]string{"request_id": id}).Err()
}

func genericReason(c codes.Code) string {
	switch c {
	case codes.Unavailable:
		return ReasonStoreUnavailable
	case codes.DataLoss:
		return ReasonDataLoss
	}
	return ReasonInternal
}

func genericMessage(c codes.Code) string {
	switch c {
	case codes.Unavailable:
		return "the agent cannot reach its metadata or object store; retry later"
	case codes.DataLoss:
		return "read: stored data does not decode or does not match its metadata"
	}
	return "internal error in the agent"
}
