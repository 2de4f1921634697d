package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NewRequestID returns a fresh id for one HTTP answer, told to the client
// and logged with the cause of a failure (16 hex digits, as gRPC's).
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// failure is how the console answers err: a status and a message that
// carries nothing internal. Client errors (a name that does not exist, a
// bad argument) keep the agent's message, as gRPC clients see it; any
// other failure gets a generic message by kind.
func failure(err error) (int, string) {
	var st interface{ GRPCStatus() *status.Status }
	code := codes.Unknown
	msg := ""
	if errors.As(err, &st) {
		s := st.GRPCStatus()
		code, msg = s.Code(), s.Message()
	}
	switch {
	case errors.Is(err, errStarting):
		return http.StatusServiceUnavailable, "the agent is starting: retry"
	case errors.Is(err, context.DeadlineExceeded), code == codes.DeadlineExceeded:
		return http.StatusGatewayTimeout, "the agent did not answer in time: retry"
	case code == codes.NotFound:
		return http.StatusNotFound, msg
	case code == codes.InvalidArgument:
		return http.StatusBadRequest, msg
	case code == codes.Unavailable:
		return http.StatusServiceUnavailable, "the agent cannot reach its stores now: retry"
	}
	return http.StatusBadGateway, "the agent failed to answer"
}

// canceled reports whether err is the request's context ending (the
// client left), not a failure worth a warning.
func canceled(err error) bool {
	return errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled
}

// fail answers err (failure) and logs its cause with the request id.
func (c *Console) fail(w http.ResponseWriter, err error) {
	code, msg := failure(err)
	c.replyError(w, code, msg, err)
}

// replyError writes {"error": msg, "requestId": id} with code, and logs
// cause (if any) with the same id: the cause never goes in the body.
func (c *Console) replyError(w http.ResponseWriter, code int, msg string, cause error) {
	id := NewRequestID()
	if cause != nil {
		lvl := c.log.Warn
		if code < 500 || canceled(cause) {
			lvl = c.log.Debug
		}
		lvl("console request failed", "request_id", id, "status", code, "err", cause)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Request-Id", id)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "requestId": id})
}
