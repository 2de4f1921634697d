package client

import (
	"crypto/tls"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/floe-broker/floe/internal/tlsconf"
)

// WithTLS is the Dial option of a TLS connection with cfg (from TLSConfig,
// or one of the caller's own).
func WithTLS(cfg *tls.Config) grpc.DialOption {
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg))
}

// TLSConfig is a client TLS configuration: the server's certificate
// verified against the PEM bundle caFile (empty: the system's roots), and
// certFile and keyFile, optional, the client certificate presented to an
// agent that asks for one (mutual TLS). TLS 1.2 at least.
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	return tlsconf.Client(tlsconf.ClientConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile})
}
