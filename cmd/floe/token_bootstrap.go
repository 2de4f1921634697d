package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// tokenStoreFlags are `floe token create`'s -store and -data: write the
// token straight into the metadata store, without an agent. This is the
// bootstrap of a cluster with auth.enabled: the first admin has no token
// to call AdminService with, so whoever can reach the metadata store (and
// so could change anything anyway) creates it there, for a principal
// listed in auth.superusers.
type tokenStoreFlags struct {
	store, data *string
}

func (f tokenStoreFlags) direct() bool { return *f.store != "" || *f.data != "" }

// createTokenInStore creates a token for principal in the store that f
// names and prints it as the agent's CreateToken would.
func (f tokenStoreFlags) createTokenInStore(ctx context.Context, principal string, ttl time.Duration, stdout, stderr io.Writer) error {
	if *f.store != "" && *f.data != "" {
		return errors.New("token create: flag -data: give -store or -data, not both")
	}
	text, t, err := auth.NewToken(principal, ttl)
	if err != nil {
		return fmt.Errorf("token create: flag -principal: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var st interface {
		auth.Store
		Close() error
	}
	if *f.store != "" {
		pg, err := postgres.Open(ctx, *f.store, postgres.DefaultOptions())
		if err != nil {
			return fmt.Errorf("token create: flag -store: %w", err)
		}
		st = pg
	} else {
		sq, err := sqlite.Open(ctx, filepath.Join(*f.data, "metadata.db"))
		if err != nil {
			return fmt.Errorf("token create: flag -data: %w", err)
		}
		st = sq
	}
	defer st.Close()
	if err := st.CreateToken(ctx, t); err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	fmt.Fprintln(stdout, text)
	fmt.Fprintf(stderr, "token %s for %s, expires %s, written to the metadata store; it is shown only this once\n",
		t.ID, t.Principal, formatExpiry(expiryMs(t)))
	return nil
}

func expiryMs(t auth.Token) int64 {
	if t.Expires.IsZero() {
		return 0
	}
	return t.Expires.UnixMilli()
}
