package client

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// WithToken is the Dial option that sends token (from `floe token create`)
// with every call, as the metadata "authorization: Bearer TOKEN". It
// requires TLS (WithTLS): without it Dial refuses ("the credentials
// require transport level security"), so that a token never crosses the
// network in clear. WithTokenOverPlaintext opts out.
func WithToken(token string) grpc.DialOption {
	return grpc.WithPerRPCCredentials(bearer{token: token, secure: true})
}

// WithTokenOverPlaintext is WithToken that also sends the token over a
// plaintext connection: for an agent on the same host (floe dev on
// 127.0.0.1), or behind a proxy that terminates TLS. Anyone who can read
// the connection can then replay the token until it expires or is
// revoked.
func WithTokenOverPlaintext(token string) grpc.DialOption {
	return grpc.WithPerRPCCredentials(bearer{token: token})
}

// bearer is a token as gRPC per-RPC credentials.
type bearer struct {
	token  string
	secure bool // refuse connections without transport security
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

var _ credentials.PerRPCCredentials = bearer{}
