// Package accesstest holds in-memory fakes of the auth interfaces for
// tests of the front ends: an auth.Store (and auth.Authorizer over its
// ACLs), and a TokenVerifier. The real ones are the metadata stores'.
package accesstest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/floe-broker/floe/auth"
)

// Store is a map-backed auth.Store and auth.Authorizer (auth.Authorize
// over its ACLs, no superusers: those are the Guard's).
type Store struct {
	mu     sync.Mutex // protects the fields below
	tokens map[string]auth.Token
	creds  map[credKey]auth.ScramCredential
	acls   []auth.ACL
}

type credKey struct {
	user string
	mech auth.ScramMechanism
}

var (
	_ auth.Store      = (*Store)(nil)
	_ auth.Authorizer = (*Store)(nil)
)

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{tokens: map[string]auth.Token{}, creds: map[credKey]auth.ScramCredential{}}
}

// Authorize implements auth.Authorizer.
func (s *Store) Authorize(p auth.Principal, op auth.Operation, res auth.Resource) auth.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return auth.Authorize(s.acls, nil, p, op, res)
}

// Allow adds an allow ACL of a literal resource (a test shorthand).
func (s *Store) Allow(principal string, op auth.Operation, res auth.Resource) {
	_ = s.CreateACLs(context.Background(), []auth.ACL{{Principal: principal, Host: "*", Resource: res.Type,
		Pattern: auth.PatternLiteral, Name: res.Name, Operation: op, Permission: auth.Allow}})
}

// SetPassword stores user's credential for mech derived from password.
func (s *Store) SetPassword(user string, mech auth.ScramMechanism, password string) error {
	c, err := auth.NewScramCredential(user, mech, password, nil, auth.MinScramIterations)
	if err != nil {
		return err
	}
	return s.PutScramCredential(context.Background(), c)
}

func (s *Store) CreateToken(_ context.Context, t auth.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[t.ID] = t
	return nil
}

func (s *Store) Token(_ context.Context, id string) (auth.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[id]
	if !ok {
		return auth.Token{}, fmt.Errorf("%w: token %q", auth.ErrNotFound, id)
	}
	return t, nil
}

func (s *Store) ListTokens(context.Context) ([]auth.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.Token
	for _, t := range s.tokens {
		out = append(out, t)
	}
	return out, nil
}

func (s *Store) RevokeToken(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[id]
	if !ok {
		return fmt.Errorf("%w: token %q", auth.ErrNotFound, id)
	}
	t.Revoked = true
	s.tokens[id] = t
	return nil
}

func (s *Store) PutScramCredential(_ context.Context, c auth.ScramCredential) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creds[credKey{c.User, c.Mechanism}] = c
	return nil
}

func (s *Store) ScramCredential(_ context.Context, user string, mech auth.ScramMechanism) (auth.ScramCredential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.creds[credKey{user, mech}]
	if !ok {
		return auth.ScramCredential{}, fmt.Errorf("%w: %s credential of %q", auth.ErrNotFound, mech, user)
	}
	return c, nil
}

func (s *Store) ListScramCredentials(context.Context) ([]auth.ScramCredential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.ScramCredential
	for _, c := range s.creds {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b auth.ScramCredential) int {
		if a.User != b.User {
			if a.User < b.User {
				return -1
			}
			return 1
		}
		return int(a.Mechanism) - int(b.Mechanism)
	})
	return out, nil
}

func (s *Store) DeleteScramCredential(_ context.Context, user string, mech auth.ScramMechanism) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := credKey{user, mech}
	if _, ok := s.creds[k]; !ok {
		return fmt.Errorf("%w: %s credential of %q", auth.ErrNotFound, mech, user)
	}
	delete(s.creds, k)
	return nil
}

func (s *Store) CreateACLs(_ context.Context, acls []auth.ACL) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range acls {
		if !slices.Contains(s.acls, a) {
			s.acls = append(s.acls, a)
		}
	}
	return nil
}

func (s *Store) ListACLs(_ context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.ACL
	for _, a := range s.acls {
		if Matches(f, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *Store) DeleteACLs(_ context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone, kept []auth.ACL
	for _, a := range s.acls {
		if Matches(f, a) {
			gone = append(gone, a)
		} else {
			kept = append(kept, a)
		}
	}
	s.acls = kept
	return gone, nil
}

// ACLs returns a copy of every ACL.
func (s *Store) ACLs() []auth.ACL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acls)
}

// Matches reports whether f selects a (zero fields match anything).
func Matches(f auth.ACLFilter, a auth.ACL) bool {
	return (f.Principal == "" || f.Principal == a.Principal) &&
		(f.Resource == auth.ResourceUnknown || f.Resource == a.Resource) &&
		(f.Pattern == auth.PatternUnknown || f.Pattern == a.Pattern) &&
		(f.Name == "" || f.Name == a.Name) &&
		(f.Operation == auth.OpUnknown || f.Operation == a.Operation) &&
		(f.Permission == auth.PermissionUnknown || f.Permission == a.Permission)
}

// Verifier is a map-backed access.TokenVerifier: each token's principal,
// or the error it fails with (expired, revoked).
type Verifier struct {
	mu     sync.Mutex // protects tokens
	tokens map[string]result
}

type result struct {
	p   auth.Principal
	err error
}

// NewVerifier returns a verifier that knows no token.
func NewVerifier() *Verifier { return &Verifier{tokens: map[string]result{}} }

// Add makes token verify as user.
func (v *Verifier) Add(token, user string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tokens[token] = result{p: auth.Principal{Name: user}}
}

// Fail makes token fail with err.
func (v *Verifier) Fail(token string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tokens[token] = result{err: err}
}

// VerifyToken implements access.TokenVerifier.
func (v *Verifier) VerifyToken(_ context.Context, token string) (auth.Principal, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.tokens[token]
	if !ok {
		return auth.Principal{}, fmt.Errorf("%w: unknown token", auth.ErrUnauthenticated)
	}
	return r.p, r.err
}
