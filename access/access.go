// Package access is what the front ends (gRPC, HTTP, Kafka) share to
// enforce authentication and authorization: the settings (Config), the
// interfaces they need of the auth implementation (TokenVerifier, and
// auth.Authorizer), the principal of an mTLS peer certificate
// (CertPrincipal), and the Guard every check goes through: superusers, the
// ACL answer, and the bounded denial log and metric.
//
// The rules themselves live in package auth (auth.Authorize); which check
// each API needs lives with the front end (agent/authz.go,
// kafka/authz.go). This package holds no ACLs and no credentials.
package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/auth"
)

// TokenVerifier turns a bearer token into its principal. Errors wrap
// auth.ErrUnauthenticated (unknown, malformed, expired or revoked token)
// or are the store's (unavailable); both refuse the call.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (auth.Principal, error)
}

// Config holds the settings of authentication and authorization.
type Config struct {
	// Enabled turns authentication and authorization on; off, every
	// caller may do everything (floe dev's default).
	Enabled bool
	// Superusers are principals ("User:NAME") that bypass the ACLs.
	Superusers []string
	// CertPrincipal is how an mTLS peer certificate names its principal.
	CertPrincipal CertRule
	// DenialLogInterval: a denial of one (principal, operation, resource)
	// is logged at most once per interval.
	DenialLogInterval time.Duration
	// MaxDenialKeys bounds the (principal, operation, resource) keys the
	// denial log remembers.
	MaxDenialKeys int
}

// DefaultConfig returns the defaults: authentication off.
func DefaultConfig() Config {
	return Config{CertPrincipal: CertCN, DenialLogInterval: time.Minute, MaxDenialKeys: 10000}
}

// Validate checks c, naming the first bad field.
func (c Config) Validate() error {
	for _, s := range c.Superusers {
		if _, err := auth.ParsePrincipal(s); err != nil {
			return fmt.Errorf("access: config Superusers: %w", err)
		}
	}
	switch {
	case c.CertPrincipal < CertCN || c.CertPrincipal > CertSANEmail:
		return fmt.Errorf("access: config CertPrincipal %d is not a rule", c.CertPrincipal)
	case c.DenialLogInterval <= 0:
		return fmt.Errorf("access: config DenialLogInterval %v must be positive", c.DenialLogInterval)
	case c.MaxDenialKeys <= 0:
		return fmt.Errorf("access: config MaxDenialKeys %d must be positive", c.MaxDenialKeys)
	}
	return nil
}

// ParseSuperusers reads a comma-separated list of principals ("User:a,User:b").
func ParseSuperusers(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if _, err := auth.ParsePrincipal(f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// BearerToken returns the token of an "Authorization: Bearer TOKEN" value
// (the scheme case-insensitive, as RFC 6750 allows).
func BearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// ErrNoCredential: the caller presented neither a token nor a verified
// certificate.
var ErrNoCredential = fmt.Errorf("%w: no credential (a bearer token or a client certificate)", auth.ErrUnauthenticated)

// principalKey carries the authenticated principal in a context.
type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, if any.
func PrincipalFrom(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(auth.Principal)
	return p, ok
}

// IsUnauthenticated reports whether err refuses a credential (as opposed
// to a store failure).
func IsUnauthenticated(err error) bool { return errors.Is(err, auth.ErrUnauthenticated) }
