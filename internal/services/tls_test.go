package services

import (
	"context"
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

// TestPostgresTLS: a cluster started with TLS takes sslmode=verify-full
// connections that trust its CA, and refuses to be trusted with another.
func TestPostgresTLS(t *testing.T) {
	dir := t.TempDir()
	good, err := tlstest.WriteFiles(dir, "pg")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlstest.WriteFiles(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := DefaultPostgresConfig()
	cfg.Durable, cfg.TLS = false, &ServerTLS{CertFile: good.ServerCert, KeyFile: good.ServerKey}
	pg, err := StartPostgres(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	withCA := func(ca string) string {
		u, err := url.Parse(pg.AdminURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("sslmode", "verify-full")
		q.Set("sslrootcert", ca)
		u.RawQuery = q.Encode()
		return u.String()
	}
	conn, err := pgx.Connect(ctx, withCA(good.CAFile))
	if err != nil {
		t.Fatalf("verify-full with the server's CA: %v", err)
	}
	var ssl bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("connection over TLS: %v %v", ssl, err)
	}
	conn.Close(ctx)
	if c, err := pgx.Connect(ctx, withCA(other.CAFile)); err == nil {
		c.Close(ctx)
		t.Fatal("verify-full with a foreign CA connected")
	} else if !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("verify-full with a foreign CA: %v, want an unknown authority", err)
	}
}

// TestVersitygwTLS: versitygw started with TLS serves HTTPS to a client
// that trusts its CA, and a client that trusts another CA is refused.
func TestVersitygwTLS(t *testing.T) {
	dir := t.TempDir()
	good, err := tlstest.WriteFiles(dir, "s3")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlstest.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	roots := x509.NewCertPool()
	roots.AddCert(good.CA.Cert)
	srv, err := StartVersitygwTLS(ctx, nil, ServerTLS{CertFile: good.ServerCert, KeyFile: good.ServerKey}, roots)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if !strings.HasPrefix(srv.Endpoint, "https://") {
		t.Fatalf("endpoint %s", srv.Endpoint)
	}
	if err := srv.CreateBucket(ctx, "tls"); err != nil {
		t.Fatal(err)
	}
	foreign := *srv
	foreign.RootCAs = x509.NewCertPool()
	foreign.RootCAs.AddCert(other.Cert)
	if err := foreign.CreateBucket(ctx, "tls2"); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a client trusting another CA: %v, want an unknown authority", err)
	}
}
