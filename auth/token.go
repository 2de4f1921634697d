package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// A bearer token reads "floe_<id>_<secret>": the id is 16 lowercase hex
// digits (64 random bits, public, the store's key), the secret 64 lowercase
// hex digits (256 random bits). The store keeps only the secret's SHA-256.
const (
	TokenPrefix    = "floe_"
	tokenIDLen     = 16
	tokenSecretLen = 64
	// TokenLen is the length of every token's text.
	TokenLen = len(TokenPrefix) + tokenIDLen + 1 + tokenSecretLen
)

// NewToken makes a token for principal ("User:NAME") that expires after ttl
// (0: never), returning its text, shown once, and the form to store.
func NewToken(principal string, ttl time.Duration) (string, Token, error) {
	if _, err := ParsePrincipal(principal); err != nil {
		return "", Token{}, err
	}
	if ttl < 0 {
		return "", Token{}, fmt.Errorf("%w: token ttl %v is negative", ErrInvalid, ttl)
	}
	var raw [tokenIDLen/2 + tokenSecretLen/2]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("auth: token: %w", err)
	}
	id := hex.EncodeToString(raw[:tokenIDLen/2])
	secret := hex.EncodeToString(raw[tokenIDLen/2:])
	t := Token{ID: id, Principal: principal, Hash: hashSecret(secret), Created: time.Now().UTC().Truncate(time.Microsecond)}
	if ttl > 0 {
		t.Expires = t.Created.Add(ttl)
	}
	return TokenPrefix + id + "_" + secret, t, nil
}

// ParseToken splits a token's text into its id and secret. Anything but a
// well-formed token is ErrUnauthenticated, and the error never repeats the
// secret.
func ParseToken(s string) (id, secret string, err error) {
	if len(s) != TokenLen || !strings.HasPrefix(s, TokenPrefix) || s[len(TokenPrefix)+tokenIDLen] != '_' {
		return "", "", fmt.Errorf("%w: malformed bearer token (want %s<16 hex>_<64 hex>)", ErrUnauthenticated, TokenPrefix)
	}
	id = s[len(TokenPrefix) : len(TokenPrefix)+tokenIDLen]
	secret = s[len(TokenPrefix)+tokenIDLen+1:]
	if !isLowerHex(id) || !isLowerHex(secret) {
		return "", "", fmt.Errorf("%w: malformed bearer token (want %s<16 hex>_<64 hex>)", ErrUnauthenticated, TokenPrefix)
	}
	return id, secret, nil
}

// ValidTokenID reports whether id has the form of a token id, for the
// edges that take one (revoke).
func ValidTokenID(id string) bool { return len(id) == tokenIDLen && isLowerHex(id) }

// Verify checks secret against the stored token at time now: the hashes
// compared in constant time, then expiry and revocation. Every refusal is
// ErrUnauthenticated.
func (t Token) Verify(secret string, now time.Time) error {
	if subtle.ConstantTimeCompare(hashSecret(secret), t.Hash) != 1 {
		return fmt.Errorf("%w: token %s: wrong secret", ErrUnauthenticated, t.ID)
	}
	if t.Revoked {
		return fmt.Errorf("%w: token %s is revoked", ErrUnauthenticated, t.ID)
	}
	if t.Expired(now) {
		return fmt.Errorf("%w: token %s expired at %s", ErrUnauthenticated, t.ID, t.Expires.UTC().Format(time.RFC3339))
	}
	return nil
}

// Expired reports whether the token's expiry has passed at now.
func (t Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
