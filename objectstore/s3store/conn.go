package s3store

// conn.go: the connections a Store's HTTP transport dials. A plain-HTTP
// request body reaches the socket through net/http's io.Copy, which
// wraps the body in an io.LimitedReader and writes it from a 32 KiB
// buffer: 256 write calls for an 8 MiB file, each one a trip through the
// kernel's TCP send path. bodyConn writes it from a 1 MiB buffer instead
// (8 calls). TLS connections are unaffected: crypto/tls writes records of
// its own size from whatever it is given.

import (
	"context"
	"io"
	"net"
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

// ReadFrom writes r to the connection until io.EOF.
func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
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
