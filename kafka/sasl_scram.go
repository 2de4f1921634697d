package kafka

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/floe-broker/floe/auth"
)

// The server side of SCRAM (RFC 5802, with RFC 7677's SHA-256 and Kafka's
// SHA-512), as a pure state machine: no I/O, no clock, the nonce given.
//
//	client-first  n,,n=USER,r=CNONCE          (GS2 header "n,," or "y,,": no channel binding)
//	server-first  r=CNONCE SNONCE,s=SALT,i=ITERATIONS
//	client-final  c=biws,r=CNONCE SNONCE,p=PROOF
//	server-final  v=SERVER-SIGNATURE
//
// The proof is checked against the stored credential only (StoredKey,
// ServerKey): ClientKey = PROOF xor HMAC(StoredKey, AuthMessage) must hash
// to StoredKey. Kafka's extensions (tokenauth) and channel binding ("p=")
// are refused.

// errScram refuses a SCRAM exchange (the client hears only
// SASL_AUTHENTICATION_FAILED).
var errScram = errors.New("kafka: scram")

// scramFirst is a parsed client-first message.
type scramFirst struct {
	gs2   string // the GS2 header, "n,," or "y,," (with a=USER when given)
	user  string // decoded (=2C, =3D)
	nonce string
	bare  string // client-first-message-bare, for the AuthMessage
}

// parseScramFirst reads a client-first message.
func parseScramFirst(msg []byte) (scramFirst, error) {
	s := string(msg)
	var f scramFirst
	// gs2-header = gs2-cbind-flag "," [ authzid ] ","
	cb, rest, ok := strings.Cut(s, ",")
	if !ok {
		return f, fmt.Errorf("%w: client-first has no GS2 header", errScram)
	}
	switch {
	case cb == "n" || cb == "y":
	case strings.HasPrefix(cb, "p="):
		return f, fmt.Errorf("%w: channel binding is not supported", errScram)
	default:
		return f, fmt.Errorf("%w: bad channel-binding flag %q", errScram, cb)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return f, fmt.Errorf("%w: client-first has no GS2 header", errScram)
	}
	var authzUser string
	if authz != "" {
		v, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return f, fmt.Errorf("%w: bad authzid %q", errScram, authz)
		}
		u, err := scramName(v)
		if err != nil {
			return f, err
		}
		authzUser = u
	}
	f.gs2 = s[:len(s)-len(bare)]
	f.bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 {
		return f, fmt.Errorf("%w: client-first needs n= and r=", errScram)
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return f, fmt.Errorf("%w: mandatory extensions are not supported", errScram)
	}
	u, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return f, fmt.Errorf("%w: client-first has no n=", errScram)
	}
	user, err := scramName(u)
	if err != nil {
		return f, err
	}
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || !printableNonce(nonce) {
		return f, fmt.Errorf("%w: client-first has no valid r=", errScram)
	}
	for _, ext := range attrs[2:] {
		name, _, ok := strings.Cut(ext, "=")
		switch {
		case name == "tokenauth":
			return f, fmt.Errorf("%w: delegation tokens are not supported", errScram)
		case !ok || name == "" || strings.ContainsAny(name, " \x00"):
			return f, fmt.Errorf("%w: malformed attribute %q", errScram, ext)
		}
	}
	if user == "" || len(user) > 255 {
		return f, fmt.Errorf("%w: user name must be 1 to 255 bytes", errScram)
	}
	if authzUser != "" && authzUser != user {
		return f, fmt.Errorf("%w: authzid %q is not the user %q", errScram, authzUser, user)
	}
	f.user, f.nonce = user, nonce
	return f, nil
}

// scramName decodes a saslname: "=2C" is ",", "=3D" is "=", any other "="
// is malformed.
func scramName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in name %q", errScram, s)
		}
		i += 2
	}
	return b.String(), nil
}

// printableNonce: RFC 5802's printable ASCII but ",".
func printableNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}

// scramServer is one exchange after the client-first message: the
// credential of its user and the nonce the server chose.
type scramServer struct {
	first       scramFirst
	cred        auth.ScramCredential
	nonce       string // client nonce + server nonce
	serverFirst string
}

// newScramServer answers first with cred (the stored credential of
// first.user) and serverNonce (random printable characters): the
// exchange and its server-first message.
func newScramServer(first scramFirst, cred auth.ScramCredential, serverNonce string) (*scramServer, []byte) {
	s := &scramServer{first: first, cred: cred, nonce: first.nonce + serverNonce}
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return s, []byte(s.serverFirst)
}

// scramFinal is a parsed client-final message.
type scramFinal struct {
	channel string // c=, base64 of the GS2 header
	nonce   string
	proof   []byte
	noProof string // client-final-message-without-proof
}

// parseScramFinal reads a client-final message.
func parseScramFinal(msg []byte) (scramFinal, error) {
	s := string(msg)
	var f scramFinal
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return f, fmt.Errorf("%w: client-final has no p=", errScram)
	}
	f.noProof = s[:i]
	proof, err := base64.StdEncoding.DecodeString(s[i+3:])
	if err != nil || len(proof) == 0 {
		return f, fmt.Errorf("%w: client-final proof is not base64", errScram)
	}
	f.proof = proof
	attrs := strings.Split(f.noProof, ",")
	if len(attrs) < 2 {
		return f, fmt.Errorf("%w: client-final needs c= and r=", errScram)
	}
	c, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return f, fmt.Errorf("%w: client-final has no c=", errScram)
	}
	r, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok {
		return f, fmt.Errorf("%w: client-final has no r=", errScram)
	}
	f.channel, f.nonce = c, r
	return f, nil
}

// final checks the client-final message msg: the server-final message
// when the proof holds, else an error.
func (s *scramServer) final(msg []byte) ([]byte, error) {
	f, err := parseScramFinal(msg)
	if err != nil {
		return nil, err
	}
	if f.channel != base64.StdEncoding.EncodeToString([]byte(s.first.gs2)) {
		return nil, fmt.Errorf("%w: channel binding does not match the GS2 header", errScram)
	}
	// Apache Kafka accepts a nonce that ends with the server's (its
	// ScramSaslServer checks endsWith): librdkafka sends its client nonce
	// again before the one of server-first. The proof covers the message
	// as sent.
	if !strings.HasSuffix(f.nonce, s.nonce) {
		return nil, fmt.Errorf("%w: nonce does not match", errScram)
	}
	h := s.cred.Mechanism.New()
	if h == nil || len(f.proof) != h().Size() || len(s.cred.StoredKey) != h().Size() {
		return nil, fmt.Errorf("%w: invalid credentials", errScram)
	}
	authMsg := s.first.bare + "," + s.serverFirst + "," + f.noProof
	sig := hmac.New(h, s.cred.StoredKey)
	sig.Write([]byte(authMsg))
	clientKey := sig.Sum(nil)
	for i := range clientKey {
		clientKey[i] ^= f.proof[i]
	}
	sum := h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, fmt.Errorf("%w: invalid credentials", errScram)
	}
	ss := hmac.New(h, s.cred.ServerKey)
	ss.Write([]byte(authMsg))
	return []byte("v=" + base64.StdEncoding.EncodeToString(ss.Sum(nil))), nil
}

// parsePlain reads a SASL PLAIN message (RFC 4616): authzid NUL authcid
// NUL password; the authzid empty or the user itself.
func parsePlain(msg []byte) (user, password string, err error) {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%w: PLAIN message is not authzid NUL user NUL password", errScram)
	}
	if parts[1] == "" || len(parts[1]) > 255 || parts[2] == "" {
		return "", "", fmt.Errorf("%w: PLAIN user (1 to 255 bytes) and password must not be empty", errScram)
	}
	if parts[0] != "" && parts[0] != parts[1] {
		return "", "", fmt.Errorf("%w: authzid %q is not the user %q", errScram, parts[0], parts[1])
	}
	return parts[1], parts[2], nil
}

// plainMatches reports whether password derives cred's StoredKey (with
// cred's salt and iterations), compared in constant time.
func plainMatches(cred auth.ScramCredential, password string) bool {
	d, err := auth.NewScramCredential(cred.User, cred.Mechanism, password, cred.Salt, cred.Iterations)
	return err == nil && subtle.ConstantTimeCompare(d.StoredKey, cred.StoredKey) == 1
}
