package tlsconf

import (
	"io"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// Bounds of the wait after a refused handshake (lingerRefused).
const (
	refusedLinger = time.Second
	refusedBytes  = 64 << 10
)

// GRPCCredentials are the gRPC server's transport credentials of s.
// After a refused handshake the connection stays open a moment, reading
// and dropping what the client sends, so that a TLS 1.3 client, whose
// certificate is refused only after its side of the handshake is done,
// reads the server's alert ("certificate required") instead of a broken
// pipe.
func (s *Server) GRPCCredentials() credentials.TransportCredentials {
	return lingerCreds{credentials.NewTLS(s.TLSConfig())}
}

type lingerCreds struct {
	credentials.TransportCredentials
}

func (c lingerCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	// gRPC's TLS credentials close the connection when the handshake
	// fails: the close lingers while the handshake runs.
	lc := &lingerConn{Conn: raw}
	lc.armed.Store(true)
	conn, info, err := c.TransportCredentials.ServerHandshake(lc)
	lc.armed.Store(false)
	return conn, info, err
}

// lingerConn lingers in Close while armed (lingerRefused).
type lingerConn struct {
	net.Conn
	armed atomic.Bool
}

func (c *lingerConn) Close() error {
	if c.armed.Swap(false) {
		lingerRefused(c.Conn)
	}
	return c.Conn.Close()
}

func (c lingerCreds) Clone() credentials.TransportCredentials {
	return lingerCreds{c.TransportCredentials.Clone()}
}

// lingerRefused reads and drops at most refusedBytes from conn for at most
// refusedLinger (until the client closes), leaving the alert already sent
// for the client to read.
func lingerRefused(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(refusedLinger))
	_, _ = io.CopyN(io.Discard, conn, refusedBytes)
}
