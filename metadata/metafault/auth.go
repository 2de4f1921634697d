package metafault

import (
	"context"

	"github.com/floe-broker/floe/auth"
)

// Auth operations share these fault groups.
const (
	OpAuthRead  Op = "auth-read"  // Token, ListTokens, ScramCredential, ListScramCredentials, ListACLs
	OpAuthWrite Op = "auth-write" // CreateToken, RevokeToken, PutScramCredential, DeleteScramCredential, CreateACLs, DeleteACLs
)

// CreateToken implements auth.Store.
func (s *Store) CreateToken(ctx context.Context, t auth.Token) error {
	return s.authWrite(ctx, func() error { return s.inner.CreateToken(ctx, t) })
}

// Token implements auth.Store.
func (s *Store) Token(ctx context.Context, id string) (auth.Token, error) {
	return call(ctx, s, OpAuthRead, func() (auth.Token, error) { return s.inner.Token(ctx, id) })
}

// ListTokens implements auth.Store.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	return call(ctx, s, OpAuthRead, func() ([]auth.Token, error) { return s.inner.ListTokens(ctx) })
}

// RevokeToken implements auth.Store.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	return s.authWrite(ctx, func() error { return s.inner.RevokeToken(ctx, id) })
}

// PutScramCredential implements auth.Store.
func (s *Store) PutScramCredential(ctx context.Context, c auth.ScramCredential) error {
	return s.authWrite(ctx, func() error { return s.inner.PutScramCredential(ctx, c) })
}

// ScramCredential implements auth.Store.
func (s *Store) ScramCredential(ctx context.Context, user string, mech auth.ScramMechanism) (auth.ScramCredential, error) {
	return call(ctx, s, OpAuthRead, func() (auth.ScramCredential, error) { return s.inner.ScramCredential(ctx, user, mech) })
}

// ListScramCredentials implements auth.Store.
func (s *Store) ListScramCredentials(ctx context.Context) ([]auth.ScramCredential, error) {
	return call(ctx, s, OpAuthRead, func() ([]auth.ScramCredential, error) { return s.inner.ListScramCredentials(ctx) })
}

// DeleteScramCredential implements auth.Store.
func (s *Store) DeleteScramCredential(ctx context.Context, user string, mech auth.ScramMechanism) error {
	return s.authWrite(ctx, func() error { return s.inner.DeleteScramCredential(ctx, user, mech) })
}

// CreateACLs implements auth.Store.
func (s *Store) CreateACLs(ctx context.Context, acls []auth.ACL) error {
	return s.authWrite(ctx, func() error { return s.inner.CreateACLs(ctx, acls) })
}

// ListACLs implements auth.Store.
func (s *Store) ListACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	return call(ctx, s, OpAuthRead, func() ([]auth.ACL, error) { return s.inner.ListACLs(ctx, f) })
}

// DeleteACLs implements auth.Store.
func (s *Store) DeleteACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	return call(ctx, s, OpAuthWrite, func() ([]auth.ACL, error) { return s.inner.DeleteACLs(ctx, f) })
}

// ACLChanges passes through, as Notices does.
func (s *Store) ACLChanges(ctx context.Context) (<-chan struct{}, error) {
	return s.inner.ACLChanges(ctx)
}

func (s *Store) authWrite(ctx context.Context, fn func() error) error {
	_, err := call(ctx, s, OpAuthWrite, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}
