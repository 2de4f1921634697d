package s3store

// conn.go: the connections a Store's HTTP transport dials. A plain-HTTP
// request body reaches the socket through net/http's io.Copy, which
// wraps the body in an io.LimitedReader and writes it from a 32 KiB
// buffer: 256 write calls for an 8 MiB file, each one a trip through the
// kernel's TCP send path. bodyConn writes it from a 1 MiB buffer instead
// (8 calls). TLS connections are unaffected: crypto/tls writes records of
// its own size from whatever it is given.
//
// A Put's body reaches net/http as the file's own bytes (bodyClient puts
// them back in place of the SDK's wrapper): bodyConn then writes them to
// the socket as they lie, in one call, with no copy at all.

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
)

// bodyCopyBytes is the buffer a request body is written to the socket
// from.
const bodyCopyBytes = 1 << 20

// bodyBufs holds the copy buffers: one per body being written, so at
// most one per upload in flight.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, bodyCopyBytes); return &b }}

// bodyConn is a dialed connection whose ReadFrom (what net/http's body
// copy calls) writes in bodyCopyBytes chunks.
type bodyConn struct{ net.Conn }

// wholeBody is a body that writes what is left of it in one call and
// knows its length (putBody, *bytes.Reader).
type wholeBody interface {
	io.WriterTo
	Len() int
}

// ReadFrom writes r to the connection until io.EOF. A wholeBody within
// the limit net/http put on it is written as it lies.
func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if wb, ok := lr.R.(wholeBody); ok && int64(wb.Len()) <= lr.N {
			n, err := wb.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	buf := bodyBufs.Get().(*[]byte)
	defer bodyBufs.Put(buf)
	// The wrappers hide ReaderFrom and WriterTo, so that CopyBuffer uses buf.
	return io.CopyBuffer(struct{ io.Writer }{c.Conn}, struct{ io.Reader }{r}, *buf)
}

// dialBodyConns wraps dial so that the connections it makes are bodyConns.
func dialBodyConns(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bodyConn{c}, nil
	}
}

// putBodyKey is the context key of the bytes a Put sends (withPutBody).
type putBodyKey struct{}

// withPutBody returns ctx carrying data, the body of the Put made with it.
func withPutBody(ctx context.Context, data []byte) context.Context {
	return context.WithValue(ctx, putBodyKey{}, data)
}

// bodyClient is the SDK's HTTP client. The SDK hands net/http a request
// body wrapped in a reader of its own, which net/http can only copy
// through a buffer; for the PUT of a Put (its context carries the bytes,
// withPutBody, and the request sends exactly them: no content encoding
// such as aws-chunked) bodyClient sends the bytes themselves, as a
// putBody that bodyConn writes with no copy, and lets net/http rewind
// them (GetBody) if it must resend.
type bodyClient struct{ *http.Client }

// putBody is a Put's bytes as a request body. It is not an io.NopCloser:
// net/http unwraps those only when they are the body itself, not within
// the wrapper it puts around a body it may resend.
type putBody struct{ *bytes.Reader }

func (putBody) Close() error { return nil }

// Do implements the SDK's HTTP client.
func (c bodyClient) Do(req *http.Request) (*http.Response, error) {
	if data, ok := req.Context().Value(putBodyKey{}).([]byte); ok && req.Method == http.MethodPut &&
		req.Body != nil && req.ContentLength == int64(len(data)) && req.Header.Get("Content-Encoding") == "" {
		req.Body = putBody{bytes.NewReader(data)}
		req.GetBody = func() (io.ReadCloser, error) { return putBody{bytes.NewReader(data)}, nil }
	}
	return c.Client.Do(req)
}
