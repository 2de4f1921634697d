package kafka

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/auth"
)

// Credentials finds a user's stored SCRAM credential (auth.Store does):
// an error wrapping auth.ErrNotFound when it has none for mech.
type Credentials interface {
	ScramCredential(ctx context.Context, user string, mech auth.ScramMechanism) (auth.ScramCredential, error)
}

// connAuth is a connection's SASL state: the mechanism its handshake
// chose, the SCRAM exchange under way, and, once authenticated, its
// principal. The handlers of SaslHandshake and SaslAuthenticate run on the
// connection's reader (synchronously), so a request after them is
// dispatched knowing the outcome.
type connAuth struct {
	mu            sync.Mutex // protects the fields below
	mech          string     // from SaslHandshake ("": none yet)
	scram         *scramServer
	authenticated bool
	principal     auth.Principal
}

func (a *connAuth) get() (auth.Principal, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.principal, a.authenticated
}

// saslMechanisms are the mechanisms SaslHandshake offers.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// preAuthKeys are the APIs a connection may call before authenticating.
func preAuthKey(key int16) bool {
	return key == kmsg.ApiVersions.Int16() || key == kmsg.SASLHandshake.Int16() || key == kmsg.SASLAuthenticate.Int16()
}

// authFailed is the answer to a request made before authentication (the
// connection closes after it): the key's response, empty but for a
// top-level SASL_AUTHENTICATION_FAILED, where the version has that code;
// nil (no answer, the connection just closes, as Apache Kafka does) where
// it has none, so that no client takes an empty answer for data.
func authFailed(key, version int16) kmsg.Response {
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	if !setErrorCode(resp, kerr.SaslAuthenticationFailed.Code) {
		return nil
	}
	// The field may exist in kmsg but not at this version: keep the
	// answer only if the code survives encoding.
	back := kmsg.ResponseForKey(key)
	back.SetVersion(version)
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		return nil
	}
	if v := reflect.ValueOf(back).Elem().FieldByName("ErrorCode"); v.Int() != int64(kerr.SaslAuthenticationFailed.Code) {
		return nil
	}
	return resp
}

// authenticated is the connection's principal: SASL's, else (a TLS
// connection with a verified client certificate, Kafka's SSL principal)
// the certificate's by auth.cert_principal; ok false: none yet.
func (c *conn) authenticated() (auth.Principal, bool) {
	if p, ok := c.sasl.get(); ok {
		return p, true
	}
	if !c.s.guard().Enabled() {
		return auth.Principal{}, false // auth off: no certificate principal to take
	}
	tc, ok := c.nc.(interface{ ConnectionState() tls.ConnectionState })
	if !ok {
		return auth.Principal{}, false
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return auth.Principal{}, false
	}
	p, err := access.CertPrincipal(st.VerifiedChains[0][0], c.s.guard().Config().CertPrincipal)
	return p, err == nil
}

// guard is the server's Guard (nil: auth off).
func (s *Server) guard() *access.Guard { return s.opts.Guard }

// serverNonce is 24 random bytes, base64 (printable, no ",").
func serverNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// closeAfterAnswer closes the connection once the request being
// dispatched is answered (called on the reader).
func (c *conn) closeAfterAnswer() { c.closeAfter = true }
