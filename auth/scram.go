package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
)

// MinScramIterations is Kafka's floor (4096).
const MinScramIterations = 4096

// DefaultScramIterations is what a credential gets when none is asked for,
// and MaxScramIterations the most accepted (each login of the user costs
// that many HMACs on the agent).
const (
	DefaultScramIterations = 8192
	MaxScramIterations     = 1000000
)

// New returns the mechanism's hash.
func (m ScramMechanism) New() func() hash.Hash {
	switch m {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// String is the SASL mechanism name.
func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

// ParseScramMechanism accepts "SCRAM-SHA-256" or "SCRAM-SHA-512".
func ParseScramMechanism(s string) (ScramMechanism, error) {
	switch s {
	case "SCRAM-SHA-256":
		return ScramSHA256, nil
	case "SCRAM-SHA-512":
		return ScramSHA512, nil
	}
	return ScramUnknown, fmt.Errorf("%w: SCRAM mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", ErrInvalid, s)
}

// NewScramCredential derives a stored credential from a password with the
// given salt (nil: 32 random bytes) and iterations (RFC 5802 §3):
// SaltedPassword = Hi(password, salt, i), StoredKey = H(HMAC(SaltedPassword,
// "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key").
func NewScramCredential(user string, m ScramMechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h := m.New()
	if h == nil {
		return ScramCredential{}, fmt.Errorf("%w: SCRAM mechanism %d", ErrInvalid, m)
	}
	return deriveScram(h, user, m, password, salt, iterations)
}

// deriveScram is NewScramCredential for any hash (the tests check it
// against RFC 5802's SHA-1 example too).
func deriveScram(h func() hash.Hash, user string, m ScramMechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	if iterations < MinScramIterations {
		return ScramCredential{}, fmt.Errorf("%w: SCRAM iterations %d below %d", ErrInvalid, iterations, MinScramIterations)
	}
	if salt == nil {
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return ScramCredential{}, err
		}
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("auth: derive SCRAM key: %w", err)
	}
	clientKey := mac(h, salted, "Client Key")
	sh := h()
	sh.Write(clientKey)
	return ScramCredential{
		User: user, Mechanism: m, Salt: salt, Iterations: iterations,
		StoredKey: sh.Sum(nil), ServerKey: mac(h, salted, "Server Key"),
	}, nil
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
