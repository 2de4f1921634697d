package s3store_test

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// TestCAFile: over HTTPS to a server whose CA is not the system's, the
// store works with CAFile naming that CA, and without it (or with a file
// holding no certificate) it is refused with a clear error.
func TestCAFile(t *testing.T) {
	dir := t.TempDir()
	pki, err := tlstest.WriteFiles(dir, "s3")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA.Cert)
	srv, err := services.StartVersitygwTLS(ctx, nil, services.ServerTLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, roots)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if err := srv.CreateBucket(ctx, "tls"); err != nil {
		t.Fatal(err)
	}
	cfg := s3store.DefaultConfig()
	cfg.Endpoint, cfg.Region, cfg.AccessKey, cfg.SecretKey = srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey
	cfg.Bucket, cfg.PathStyle, cfg.MaxAttempts = "tls", true, 1

	cfg.CAFile = pki.CAFile
	s := newStore(t, cfg)
	if err := s.Put(ctx, "k", []byte("over tls"), objectstore.PutOptions{}); err != nil {
		t.Fatalf("put with CAFile: %v", err)
	}
	if got, err := s.Get(ctx, "k", 0, -1); err != nil || string(got) != "over tls" {
		t.Fatalf("get with CAFile: %q %v", got, err)
	}

	cfg.CAFile = ""
	if err := newStore(t, cfg).CheckBucket(ctx); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("without CAFile: %v, want an unknown authority", err)
	}
	cfg.CAFile = filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(cfg.CAFile, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s3store.New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "CAFile") {
		t.Fatalf("a CAFile without certificates: %v", err)
	}
}
