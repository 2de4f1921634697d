package main

import (
	"errors"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// How a client command's error reads: one line in the user's words, with
// what to do, not the layers of the code it passed through.

// transportFailure matches the texts of a gRPC connection that never
// came up: nothing listening, a name that does not resolve.
var transportFailure = regexp.MustCompile(`connection refused|no such host|produced zero addresses|` +
	`error while dialing|i/o timeout|network is unreachable|connection reset|missing port in address`)

// notGRPC matches the texts of a gRPC client talking to an HTTP/1 server
// (floe's metrics and console port, say).
var notGRPC = regexp.MustCompile(`frame too large|server preface|malformed HTTP|unexpected HTTP status|` +
	`http2: unsupported scheme|received unexpected content-type`)

// notFoundName finds what a NotFound answer names.
var notFoundName = regexp.MustCompile(`(group|topic) not found: "?([^"\s]+)"?`)

// explain is err as the user reads it; addr is the agent address the
// command used.
func explain(err error, addr string) string {
	var se interface {
		error
		GRPCStatus() *status.Status
	}
	if !errors.As(err, &se) {
		return clean(oneLine(err))
	}
	st := se.GRPCStatus()
	msg := st.Message()
	if text, ok := explainTLS(msg, addr); ok { // tlsclient.go
		return text
	}
	switch {
	case notGRPC.MatchString(msg):
		return "floe at " + addr + " does not answer gRPC: is it the HTTP (metrics and console) port? " +
			"-addr takes the gRPC address (floe dev: " + devGRPCAddr + ")"
	case st.Code() == codes.Unavailable && transportFailure.MatchString(strings.ToLower(msg)):
		return "cannot reach floe at " + addr + ": is it running? set -addr or FLOE_ADDR"
	case st.Code() == codes.NotFound:
		if m := notFoundName.FindStringSubmatch(msg); m != nil && m[2] != "id" {
			return m[1] + ` "` + m[2] + `" not found (see 'floe ` + m[1] + ` list')`
		}
	case st.Code() == codes.Unauthenticated && strings.Contains(msg, "no credential"):
		return clean(oneLine(err)) + ": give -token, -token-file or FLOE_TOKEN (floe token create)"
	case st.Code() == codes.DeadlineExceeded:
		return "floe at " + addr + " did not answer in time: is it overloaded or stuck? " + clean(oneLine(err))
	}
	return clean(oneLine(err))
}

// clean drops the package prefixes a message gathered on its way up
// ("metadata: copy offsets: metadata: group not found").
func clean(msg string) string {
	for _, p := range []string{"metadata: ", "client: ", "batcher: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// addrOf is the agent address of a client command's arguments: its -addr
// (the first of a list), else FLOE_ADDR, else floe dev's.
func addrOf(args []string, getenv func(string) string) string {
	addr := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "addr" {
			continue
		}
		if !hasVal && i+1 < len(args) {
			val = args[i+1]
		}
		addr = val
	}
	if addr == "" {
		addr = getenv("FLOE_ADDR")
	}
	if addr == "" {
		addr = devGRPCAddr
	}
	first, _, _ := strings.Cut(addr, ",")
	return first
}
