package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata/internal/authrow"
)

// aclChannel is the channel ACL changes are announced on, beside the
// commits' channel: sent inside the changing transaction (ACLs change
// rarely; NOTIFY's lock is then no cost), so it is delivered exactly when
// the change commits.
func aclChannel(channel string) string {
	const suffix = "_acls"
	if len(channel)+len(suffix) > maxChannelName {
		channel = channel[:maxChannelName-len(suffix)]
	}
	return channel + suffix
}

// CreateToken stores a new token.
func (s *Store) CreateToken(ctx context.Context, t auth.Token) error {
	if err := t.Validate(); err != nil {
		return err
	}
	var expires *time.Time
	if !t.Expires.IsZero() {
		expires = &t.Expires
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO auth_tokens (id, principal, hash, created_at, expires_at, revoked)
		VALUES ($1, $2, $3, $4, $5, $6)`, t.ID, t.Principal, t.Hash, t.Created, expires, t.Revoked)
	if code, _ := pgCode(err); code == "23505" {
		return fmt.Errorf("%w: token %s exists", auth.ErrInvalid, t.ID)
	}
	if err != nil {
		return s.wrap("create token", err)
	}
	return nil
}

const tokenColumns = "id, principal, hash, created_at, expires_at, revoked"

func scanToken(r pgx.Row) (auth.Token, error) {
	var t auth.Token
	var expires *time.Time
	if err := r.Scan(&t.ID, &t.Principal, &t.Hash, &t.Created, &expires, &t.Revoked); err != nil {
		return auth.Token{}, err
	}
	t.Created = t.Created.UTC()
	if expires != nil {
		t.Expires = expires.UTC()
	}
	return t, nil
}

// Token returns the token with that id.
func (s *Store) Token(ctx context.Context, id string) (auth.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, "SELECT "+tokenColumns+" FROM auth_tokens WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.Token{}, fmt.Errorf("%w: token %s", auth.ErrNotFound, id)
	}
	if err != nil {
		return auth.Token{}, s.wrap("token", err)
	}
	return t, nil
}

// ListTokens returns every token, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+tokenColumns+" FROM auth_tokens ORDER BY created_at, id")
	if err != nil {
		return nil, s.wrap("list tokens", err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Token, error) { return scanToken(r) })
	if err != nil {
		return nil, s.wrap("list tokens", err)
	}
	return ts, nil
}

// RevokeToken marks the token revoked (it stays listed).
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, "UPDATE auth_tokens SET revoked = true WHERE id = $1", id)
	if err != nil {
		return s.wrap("revoke token", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: token %s", auth.ErrNotFound, id)
	}
	return nil
}

// PutScramCredential creates or replaces the user's credential for its
// mechanism.
func (s *Store) PutScramCredential(ctx context.Context, c auth.ScramCredential) error {
	if err := c.Validate(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO scram_credentials (user_name, mechanism, salt, iterations, stored_key, server_key)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_name, mechanism) DO UPDATE SET salt = EXCLUDED.salt, iterations = EXCLUDED.iterations,
			stored_key = EXCLUDED.stored_key, server_key = EXCLUDED.server_key`,
		c.User, c.Mechanism.String(), c.Salt, c.Iterations, c.StoredKey, c.ServerKey)
	if err != nil {
		return s.wrap("put scram credential", err)
	}
	return nil
}

const scramColumns = "user_name, mechanism, salt, iterations, stored_key, server_key"

func scanScram(r pgx.Row) (auth.ScramCredential, error) {
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
	c, err := scanScram(s.pool.QueryRow(ctx, "SELECT "+scramColumns+" FROM scram_credentials WHERE user_name = $1 AND mechanism = $2",
		user, mech.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.ScramCredential{}, fmt.Errorf("%w: %s credential of %q", auth.ErrNotFound, mech, user)
	}
	if err != nil {
		return auth.ScramCredential{}, s.wrap("scram credential", err)
	}
	return c, nil
}

// ListScramCredentials returns every credential by user and mechanism.
func (s *Store) ListScramCredentials(ctx context.Context) ([]auth.ScramCredential, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+scramColumns+" FROM scram_credentials ORDER BY user_name, mechanism")
	if err != nil {
		return nil, s.wrap("list scram credentials", err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.ScramCredential, error) { return scanScram(r) })
	if err != nil {
		return nil, s.wrap("list scram credentials", err)
	}
	return cs, nil
}

// DeleteScramCredential removes the user's credential for mech.
func (s *Store) DeleteScramCredential(ctx context.Context, user string, mech auth.ScramMechanism) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM scram_credentials WHERE user_name = $1 AND mechanism = $2", user, mech.String())
	if err != nil {
		return s.wrap("delete scram credential", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s credential of %q", auth.ErrNotFound, mech, user)
	}
	return nil
}

// CreateACLs stores the ACLs (one already stored is left as it is) and
// announces the change, in one transaction.
func (s *Store) CreateACLs(ctx context.Context, acls []auth.ACL) error {
	acls, err := authrow.ValidateACLs(acls)
	if err != nil || len(acls) == 0 {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, a := range acls {
			b.Queue("INSERT INTO acls ("+authrow.ACLColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
				authrow.Values(a)...)
		}
		b.Queue("SELECT pg_notify($1, '')", aclChannel(s.opts.NotifyChannel))
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return s.wrap("create acls", err)
	}
	return nil
}

// ListACLs returns the ACLs f selects, in a stable order.
func (s *Store) ListACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+authrow.ACLColumns+" FROM acls WHERE "+authrow.FilterWhere+
		" ORDER BY resource_type, name, pattern_type, principal, host, operation, permission", authrow.FilterArgs(f)...)
	if err != nil {
		return nil, s.wrap("list acls", err)
	}
	acls, err := collectACLs(rows)
	if err != nil {
		return nil, s.wrap("list acls", err)
	}
	return acls, nil
}

// DeleteACLs removes the ACLs f selects and announces the change, in one
// transaction.
func (s *Store) DeleteACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	var acls []auth.ACL
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "DELETE FROM acls WHERE "+authrow.FilterWhere+" RETURNING "+authrow.ACLColumns, authrow.FilterArgs(f)...)
		if err != nil {
			return err
		}
		if acls, err = collectACLs(rows); err != nil || len(acls) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", aclChannel(s.opts.NotifyChannel))
		return err
	})
	if err != nil {
		return nil, s.wrap("delete acls", err)
	}
	return acls, nil
}

func collectACLs(rows pgx.Rows) ([]auth.ACL, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.ACL, error) {
		var row authrow.Row
		if err := r.Scan(row.Dest()...); err != nil {
			return auth.ACL{}, err
		}
		return row.ACL()
	})
}

// ACLChanges returns a channel that receives after ACLs change, in any
// process sharing the database (and after the listener reconnects, since
// changes announced while it was away are lost). It starts the listener
// as Notices does.
func (s *Store) ACLChanges(ctx context.Context) (<-chan struct{}, error) {
	ch, err := s.aclSignal.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	s.awaitListener(ctx)
	return ch, nil
}
