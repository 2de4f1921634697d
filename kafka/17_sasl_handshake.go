package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake: v1. v0 carries the SASL tokens outside Kafka frames,
// which floe does not read: a v0 handshake is answered UNSUPPORTED_VERSION.
// v0 is still advertised because librdkafka (kcat, confluent-kafka) only
// enables SASL SCRAM when the broker's range includes it; it then sends v1.
//
// Offers PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 when the server has a
// credential store (Options.Credentials), none otherwise
// (UNSUPPORTED_SASL_MECHANISM). A second handshake on a connection is
// ILLEGAL_SASL_STATE. Served on the reader, before the next request is
// dispatched.

func init() { register(kmsg.SASLHandshake, 0, 1, saslHandshake) }

func saslHandshake(s *Server, cc *conn, r kmsg.Request) func(context.Context) kmsg.Response {
	req := r.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if s.opts.Credentials != nil {
		resp.SupportedMechanisms = saslMechanisms
	}
	cc.sasl.mu.Lock()
	defer cc.sasl.mu.Unlock()
	switch {
	case req.Version < 1:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	case cc.sasl.mech != "" || cc.sasl.authenticated:
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case s.opts.Credentials == nil || !offered(req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		cc.sasl.mech = req.Mechanism
	}
	return func(context.Context) kmsg.Response { return resp }
}

func offered(mech string) bool {
	for _, m := range saslMechanisms {
		if m == mech {
			return true
		}
	}
	return false
}
