package access

import (
	"context"
	"crypto/x509"
	"fmt"

	"github.com/floe-broker/floe/auth"
)

// Authenticate names the caller of a gRPC call or HTTP request: the
// principal of its bearer token (authorization, the header's value, empty
// if none), else of its verified client certificate (cert, nil if none).
// A token that does not verify is refused even when a certificate would
// have named someone: the caller asked to be the token's principal. No
// credential at all is ErrNoCredential.
func Authenticate(ctx context.Context, v TokenVerifier, rule CertRule, authorization string, cert *x509.Certificate) (auth.Principal, error) {
	if authorization != "" {
		tok, ok := BearerToken(authorization)
		if !ok {
			return auth.Principal{}, fmt.Errorf("%w: authorization is not \"Bearer TOKEN\"", auth.ErrUnauthenticated)
		}
		if v == nil {
			return auth.Principal{}, fmt.Errorf("%w: bearer tokens are not accepted here", auth.ErrUnauthenticated)
		}
		p, err := v.VerifyToken(ctx, tok)
		if err != nil {
			return auth.Principal{}, err
		}
		return p, nil
	}
	if cert != nil {
		return CertPrincipal(cert, rule)
	}
	return auth.Principal{}, ErrNoCredential
}
