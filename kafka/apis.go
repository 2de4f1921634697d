package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one request. It runs on the connection's reader
// goroutine, so requests of a connection are dispatched in order (Produce
// appends its batches there, which keeps an idempotent producer's
// pipelined batches in sequence); whatever waits (a commit, a long poll, a
// group join) goes into the func it returns, which runs on a goroutine of
// its own. Responses are written in request order; a nil response writes
// nothing (Produce with acks 0).
type handler func(s *Server, cc *conn, req kmsg.Request) func(ctx context.Context) kmsg.Response

// api is one served API key.
type api struct {
	min, max int16
	// advertised is the highest version ApiVersions lists: max, or below
	// it for a version served only to clients that send it unasked (as
	// Apache Kafka's unstable versions), see registerUnadvertised.
	advertised int16
	handle     handler
}

// apis are the served API keys, registered by each API's file.
var apis = map[int16]api{}

// register serves key from version min to max (capped at what kmsg
// encodes).
func register(key kmsg.Key, min, max int16, h handler) {
	if m := kmsg.RequestForKey(key.Int16()).MaxVersion(); max > m {
		max = m
	}
	apis[key.Int16()] = api{min: min, max: max, advertised: max, handle: h}
}

// registerUnadvertised serves key from min to max but lists it in
// ApiVersions only up to advertised: clients that negotiate the highest
// version both sides know would send the versions above it wrongly.
func registerUnadvertised(key kmsg.Key, min, max, advertised int16, h handler) {
	register(key, min, max, h)
	a := apis[key.Int16()]
	if advertised < a.max {
		a.advertised = advertised
	}
	apis[key.Int16()] = a
}

// async adapts a handler that does all its work off the reader goroutine.
func async[R kmsg.Request](f func(ctx context.Context, s *Server, cc *conn, req R) kmsg.Response) handler {
	return func(s *Server, cc *conn, req kmsg.Request) func(context.Context) kmsg.Response {
		r := req.(R)
		return func(ctx context.Context) kmsg.Response { return f(ctx, s, cc, r) }
	}
}
