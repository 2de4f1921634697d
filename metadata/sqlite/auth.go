package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata/internal/authrow"
)

// filterWhere is authrow.FilterWhere with SQLite's ?NNN parameters.
var filterWhere = strings.ReplaceAll(authrow.FilterWhere, "$", "?")

// CreateToken stores a new token.
func (s *Store) CreateToken(ctx context.Context, t auth.Token) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	var expires sql.NullInt64
	if !t.Expires.IsZero() {
		expires = sql.NullInt64{Int64: t.Expires.UnixMicro(), Valid: true}
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM auth_tokens WHERE id = ?)", t.ID).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("%w: token %s exists", auth.ErrInvalid, t.ID)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO auth_tokens (id, principal, hash, created_at, expires_at, revoked)
			VALUES (?, ?, ?, ?, ?, ?)`, t.ID, t.Principal, t.Hash, t.Created.UnixMicro(), expires, t.Revoked)
		return err
	})
	return s.wrap("create token", err)
}

const tokenColumns = "id, principal, hash, created_at, expires_at, revoked"

type scanner interface{ Scan(dest ...any) error }

func scanToken(r scanner) (auth.Token, error) {
	var t auth.Token
	var created int64
	var expires sql.NullInt64
	if err := r.Scan(&t.ID, &t.Principal, &t.Hash, &created, &expires, &t.Revoked); err != nil {
		return auth.Token{}, err
	}
	t.Created = time.UnixMicro(created).UTC()
	if expires.Valid {
		t.Expires = time.UnixMicro(expires.Int64).UTC()
	}
	return t, nil
}

// Token returns the token with that id.
func (s *Store) Token(ctx context.Context, id string) (auth.Token, error) {
	if err := s.checkOpen(); err != nil {
		return auth.Token{}, err
	}
	t, err := scanToken(s.r.QueryRowContext(ctx, "SELECT "+tokenColumns+" FROM auth_tokens WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Token{}, fmt.Errorf("%w: token %s", auth.ErrNotFound, id)
	}
	if err != nil {
		return auth.Token{}, s.wrap("token", err)
	}
	return t, nil
}

// ListTokens returns every token, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	ts, err := queryAll(ctx, s, "SELECT "+tokenColumns+" FROM auth_tokens ORDER BY created_at, id", nil, scanToken)
	return ts, s.wrap("list tokens", err)
}

// RevokeToken marks the token revoked (it stays listed).
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		return affected(tx.ExecContext(ctx, "UPDATE auth_tokens SET revoked = 1 WHERE id = ?", id))
	})
	if errors.Is(err, auth.ErrNotFound) {
		return fmt.Errorf("%w: token %s", auth.ErrNotFound, id)
	}
	return s.wrap("revoke token", err)
}

// affected turns an Exec that changed no row into auth.ErrNotFound.
func affected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		return auth.ErrNotFound
	}
	return err
}

// PutScramCredential creates or replaces the user's credential for its
// mechanism.
func (s *Store) PutScramCredential(ctx context.Context, c auth.ScramCredential) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO scram_credentials (user_name, mechanism, salt, iterations, stored_key, server_key)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (user_name, mechanism) DO UPDATE SET salt = excluded.salt, iterations = excluded.iterations,
				stored_key = excluded.stored_key, server_key = excluded.server_key`,
			c.User, c.Mechanism.String(), c.Salt, c.Iterations, c.StoredKey, c.ServerKey)
		return err
	})
	return s.wrap("put scram credential", err)
}

const scramColumns = "user_name, mechanism, salt, iterations, stored_key, server_key"

func scanScram(r scanner) (auth.ScramCredential, error) {
	var c auth.ScramCredential
	var mech string
	if err := r.Scan(&c.User, &mech, &c.Salt, &c.Iterations, &c.StoredKey, &c.ServerKey); err != nil {
		return auth.ScramCredential{}, err
	}
	m, err := authrow.Mechanism(mech)
	c.Mechanism = m
	return c, err
}

// ScramCredential returns the user's credential for mech.
func (s *Store) ScramCredential(ctx context.Context, user string, mech auth.ScramMechanism) (auth.ScramCredential, error) {
	if err := s.checkOpen(); err != nil {
		return auth.ScramCredential{}, err
	}
	c, err := scanScram(s.r.QueryRowContext(ctx, "SELECT "+scramColumns+" FROM scram_credentials WHERE user_name = ? AND mechanism = ?",
		user, mech.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.ScramCredential{}, fmt.Errorf("%w: %s credential of %q", auth.ErrNotFound, mech, user)
	}
	if err != nil {
		return auth.ScramCredential{}, s.wrap("scram credential", err)
	}
	return c, nil
}

// ListScramCredentials returns every credential by user and mechanism.
func (s *Store) ListScramCredentials(ctx context.Context) ([]auth.ScramCredential, error) {
	cs, err := queryAll(ctx, s, "SELECT "+scramColumns+" FROM scram_credentials ORDER BY user_name, mechanism", nil, scanScram)
	return cs, s.wrap("list scram credentials", err)
}

// DeleteScramCredential removes the user's credential for mech.
func (s *Store) DeleteScramCredential(ctx context.Context, user string, mech auth.ScramMechanism) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		return affected(tx.ExecContext(ctx, "DELETE FROM scram_credentials WHERE user_name = ? AND mechanism = ?", user, mech.String()))
	})
	if errors.Is(err, auth.ErrNotFound) {
		return fmt.Errorf("%w: %s credential of %q", auth.ErrNotFound, mech, user)
	}
	return s.wrap("delete scram credential", err)
}

// CreateACLs stores the ACLs (one already stored is left as it is) in one
// transaction, then announces the change to this process's caches.
func (s *Store) CreateACLs(ctx context.Context, acls []auth.ACL) error {
	acls, err := authrow.ValidateACLs(acls)
	if err != nil || len(acls) == 0 {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		for _, a := range acls {
			if _, err := tx.ExecContext(ctx, "INSERT INTO acls ("+authrow.ACLColumns+") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
				authrow.Values(a)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.wrap("create acls", err)
	}
	s.aclSignal.Publish()
	return nil
}

// ListACLs returns the ACLs f selects, in a stable order.
func (s *Store) ListACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	acls, err := queryAll(ctx, s, "SELECT "+authrow.ACLColumns+" FROM acls WHERE "+filterWhere+
		" ORDER BY resource_type, name, pattern_type, principal, host, operation, permission", authrow.FilterArgs(f), scanACL)
	return acls, s.wrap("list acls", err)
}

// DeleteACLs removes the ACLs f selects in one transaction, then announces
// the change.
func (s *Store) DeleteACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var acls []auth.ACL
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "DELETE FROM acls WHERE "+filterWhere+" RETURNING "+authrow.ACLColumns, authrow.FilterArgs(f)...)
		if err != nil {
			return err
		}
		acls, err = collect(rows, scanACL)
		return err
	})
	if err != nil {
		return nil, s.wrap("delete acls", err)
	}
	if len(acls) > 0 {
		s.aclSignal.Publish()
	}
	return acls, nil
}

func scanACL(r scanner) (auth.ACL, error) {
	var row authrow.Row
	if err := r.Scan(row.Dest()...); err != nil {
		return auth.ACL{}, err
	}
	return row.ACL()
}

// ACLChanges returns a channel that receives after this process changed
// ACLs (a second process sharing the file is not heard: its changes reach
// a cache by its refresh period).
func (s *Store) ACLChanges(ctx context.Context) (<-chan struct{}, error) {
	return s.aclSignal.Subscribe(ctx)
}

// queryAll runs q on the read pool and scans every row.
func queryAll[T any](ctx context.Context, s *Store, q string, args []any, scan func(scanner) (T, error)) ([]T, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scan)
}

func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
