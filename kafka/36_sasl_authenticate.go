package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// SaslAuthenticate: v0 to v2, after SaslHandshake.
//
// PLAIN: one message, the password checked against the user's stored
// SCRAM credential (SHA-512's, else SHA-256's) by deriving it with the
// credential's salt and iterations. SCRAM-SHA-256/512: two messages
// (sasl_scram.go). Any failure — unknown user, wrong password or proof,
// a malformed message — is SASL_AUTHENTICATION_FAILED with the same
// message (no telling which users exist), and the connection closes after
// the answer, as in Kafka. SessionLifetimeMs is 0: no re-authentication.

func init() { register(kmsg.SASLAuthenticate, 0, 2, saslAuthenticate) }

const saslFailedMessage = "Authentication failed: invalid credentials"

func saslAuthenticate(s *Server, cc *conn, r kmsg.Request) func(context.Context) kmsg.Response {
	req := r.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, err := cc.saslStep(s, req.SASLAuthBytes)
	switch {
	case errors.Is(err, errSaslState):
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		cc.closeAfterAnswer()
	case err != nil:
		s.log.Info("kafka: SASL authentication failed", "client", cc.client(), "err", err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := saslFailedMessage
		resp.ErrorMessage = &msg
		cc.closeAfterAnswer()
	default:
		resp.SASLAuthBytes = out
	}
	return func(context.Context) kmsg.Response { return resp }
}

// errSaslState: SaslAuthenticate without a handshake, or after success.
var errSaslState = errors.New("kafka: SaslAuthenticate needs a SaslHandshake first, once per connection")

// saslStep runs one step of the connection's exchange.
func (c *conn) saslStep(s *Server, msg []byte) ([]byte, error) {
	a := &c.sasl
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mech == "" || a.authenticated {
		return nil, errSaslState
	}
	switch a.mech {
	case "PLAIN":
		user, password, err := parsePlain(msg)
		if err != nil {
			return nil, err
		}
		for _, m := range []auth.ScramMechanism{auth.ScramSHA512, auth.ScramSHA256} {
			cred, err := s.opts.Credentials.ScramCredential(c.ctx, user, m)
			if errors.Is(err, auth.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if !plainMatches(cred, password) {
				break
			}
			a.authenticated, a.principal = true, auth.Principal{Name: user}
			return nil, nil
		}
		return nil, errors.New("kafka: PLAIN: unknown user or wrong password")
	default:
		mech, err := auth.ParseScramMechanism(a.mech)
		if err != nil {
			return nil, err
		}
		if a.scram == nil {
			first, err := parseScramFirst(msg)
			if err != nil {
				return nil, err
			}
			cred, err := s.opts.Credentials.ScramCredential(c.ctx, first.user, mech)
			if err != nil {
				return nil, err
			}
			var out []byte
			a.scram, out = newScramServer(first, cred, serverNonce())
			return out, nil
		}
		out, err := a.scram.final(msg)
		if err != nil {
			return nil, err
		}
		a.authenticated, a.principal = true, auth.Principal{Name: a.scram.first.user}
		a.scram = nil
		return out, nil
	}
}
