package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// VerifierConfig configures a TokenVerifier.
type VerifierConfig struct {
	// Refresh is how long a token read from the store is trusted before it
	// is read again: a token revoked in the store is still accepted, by a
	// verifier that read it before, for up to Refresh.
	Refresh time.Duration
	// MaxCached bounds the tokens held; past it an arbitrary one is
	// dropped.
	MaxCached int
}

// DefaultVerifierConfig returns a refresh of 30 s and 1024 tokens.
func DefaultVerifierConfig() VerifierConfig {
	return VerifierConfig{Refresh: 30 * time.Second, MaxCached: 1024}
}

func (c VerifierConfig) validate() error {
	switch {
	case c.Refresh <= 0:
		return fmt.Errorf("%w: verifier Refresh %v, want > 0", ErrInvalid, c.Refresh)
	case c.MaxCached < 1:
		return fmt.Errorf("%w: verifier MaxCached %d, want >= 1", ErrInvalid, c.MaxCached)
	}
	return nil
}

// TokenVerifier turns a bearer token's text into its principal, reading
// tokens from a Store and keeping the ones it found for Refresh. Unknown
// ids are not cached (a caller guessing ids cannot fill the cache; each
// guess costs a store read).
type TokenVerifier struct {
	store Store
	cfg   VerifierConfig
	now   func() time.Time

	mu     sync.Mutex // protects cached
	cached map[string]cachedToken
}

type cachedToken struct {
	t    Token
	read time.Time
}

// NewTokenVerifier returns a verifier over s.
func NewTokenVerifier(s Store, cfg VerifierConfig) (*TokenVerifier, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &TokenVerifier{store: s, cfg: cfg, now: time.Now, cached: make(map[string]cachedToken)}, nil
}

// Verify returns the principal of a valid token. A malformed, unknown,
// wrong, expired or revoked token is ErrUnauthenticated; a store that
// fails is another error (the caller answers "unavailable").
func (v *TokenVerifier) Verify(ctx context.Context, text string) (Principal, error) {
	id, secret, err := ParseToken(text)
	if err != nil {
		return Principal{}, err
	}
	now := v.now()
	t, err := v.token(ctx, id, now)
	if err != nil {
		return Principal{}, err
	}
	if err := t.Verify(secret, now); err != nil {
		return Principal{}, err
	}
	p, err := ParsePrincipal(t.Principal)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: token %s: %w", ErrUnauthenticated, id, err)
	}
	return p, nil
}

// token returns the token id, from the cache if read within Refresh.
func (v *TokenVerifier) token(ctx context.Context, id string, now time.Time) (Token, error) {
	v.mu.Lock()
	c, ok := v.cached[id]
	v.mu.Unlock()
	if ok && now.Sub(c.read) < v.cfg.Refresh {
		return c.t, nil
	}
	t, err := v.store.Token(ctx, id)
	if errors.Is(err, ErrNotFound) {
		v.forget(id)
		return Token{}, fmt.Errorf("%w: unknown token %s", ErrUnauthenticated, id)
	}
	if err != nil {
		return Token{}, fmt.Errorf("auth: read token %s: %w", id, err)
	}
	v.mu.Lock()
	if _, ok := v.cached[id]; !ok && len(v.cached) >= v.cfg.MaxCached {
		for k := range v.cached {
			delete(v.cached, k)
			break
		}
	}
	v.cached[id] = cachedToken{t: t, read: now}
	v.mu.Unlock()
	return t, nil
}

// forget drops id from the cache.
func (v *TokenVerifier) forget(id string) {
	v.mu.Lock()
	delete(v.cached, id)
	v.mu.Unlock()
}

// Cached returns the number of tokens held.
func (v *TokenVerifier) Cached() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.cached)
}
