package s3store_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"go.uber.org/goleak"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/objtest"
	"github.com/floe-broker/floe/objectstore/s3store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// configFor returns a Store configuration for a fresh bucket on the test
// S3 server (versitygw), with short retry delays.
func configFor(t testing.TB) s3store.Config {
	t.Helper()
	env := testenv.S3(t)
	cfg := s3store.DefaultConfig()
	cfg.Endpoint = env.Endpoint
	cfg.Region = env.Region
	cfg.AccessKey = env.AccessKey
	cfg.SecretKey = env.SecretKey
	cfg.Bucket = env.Bucket
	cfg.PathStyle = true
	cfg.MaxBackoff = 50 * time.Millisecond
	return cfg
}

func newStore(t testing.TB, cfg s3store.Config) *s3store.Store {
	t.Helper()
	s, err := s3store.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("s3store.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestVersitygw(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		s := newStore(t, configFor(t))
		if err := s.CheckBucket(t.Context()); err != nil {
			t.Fatalf("CheckBucket: %v", err)
		}
		return s
	})
}

func TestPrefixOverVersitygw(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.WithPrefix(newStore(t, configFor(t)), "cluster-a")
	})
}

// gofakes3's in-memory backend checks If-None-Match under its lock, so it
// passes the whole suite, if-absent race included.
func TestGofakes3(t *testing.T) {
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	n := 0
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		n++
		bucket := "bucket-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
		if err := backend.CreateBucket(bucket); err != nil {
			t.Fatal(err)
		}
		cfg := s3store.DefaultConfig()
		cfg.Endpoint = srv.URL
		cfg.AccessKey, cfg.SecretKey = "fake", "fake"
		cfg.Bucket = bucket
		cfg.PathStyle = true
		return newStore(t, cfg)
	})
	if n == 0 {
		t.Fatal("suite made no store")
	}
}

func TestCheckBucket(t *testing.T) {
	ctx := t.Context()
	cfg := configFor(t)
	if err := newStore(t, cfg).CheckBucket(ctx); err != nil {
		t.Fatalf("CheckBucket on an existing bucket: %v", err)
	}

	missing := cfg
	missing.Bucket = "floe-no-such-bucket"
	err := newStore(t, missing).CheckBucket(ctx)
	wantPermanent(t, "CheckBucket on a missing bucket", err, `s3: bucket "floe-no-such-bucket" does not exist`)

	badSecret := cfg
	badSecret.SecretKey = "wrong-secret"
	err = newStore(t, badSecret).CheckBucket(ctx)
	wantPermanent(t, "CheckBucket with a wrong secret", err, "s3: access denied")

	badKey := cfg
	badKey.AccessKey = "nobody"
	err = newStore(t, badKey).CheckBucket(ctx)
	wantPermanent(t, "CheckBucket with an unknown access key", err, "s3: access denied")

	unreachable := cfg
	unreachable.Endpoint = "http://127.0.0.1:1" // nothing listens on port 1
	unreachable.MaxAttempts = 2
	err = newStore(t, unreachable).CheckBucket(ctx)
	if err == nil || objectstore.IsPermanent(err) {
		t.Errorf("CheckBucket on a closed port = %v, want a transient error", err)
	}
}

func TestOperationsReportPermanentErrors(t *testing.T) {
	ctx := t.Context()
	cfg := configFor(t)
	missing := cfg
	missing.Bucket = "floe-no-such-bucket"
	s := newStore(t, missing)
	wantPermanent(t, "Put into a missing bucket", s.Put(ctx, "k", []byte("x"), objectstore.PutOptions{}), "does not exist")
	_, err := s.Get(ctx, "k", 0, -1)
	wantPermanent(t, "Get from a missing bucket", err, "does not exist")
	wantPermanent(t, "List of a missing bucket", s.List(ctx, "", func(objectstore.ObjectInfo) error { return nil }), "does not exist")

	bad := cfg
	bad.SecretKey = "wrong-secret"
	s = newStore(t, bad)
	wantPermanent(t, "Put with a wrong secret", s.Put(ctx, "k", []byte("x"), objectstore.PutOptions{IfAbsent: true}), "access denied")
	_, err = s.Get(ctx, "k", 0, -1)
	wantPermanent(t, "Get with a wrong secret", err, "access denied")
	_, err = s.Head(ctx, "k")
	wantPermanent(t, "Head with a wrong secret", err, "access denied")
	wantPermanent(t, "Delete with a wrong secret", s.Delete(ctx, "k"), "access denied")

	unknown := cfg
	unknown.AccessKey = "nobody"
	s = newStore(t, unknown)
	wantPermanent(t, "Put with an unknown access key", s.Put(ctx, "k", []byte("x"), objectstore.PutOptions{}), "access denied")
	_, err = s.Get(ctx, "k", 0, -1)
	wantPermanent(t, "Get with an unknown access key", err, "access denied")
	wantPermanent(t, "List with an unknown access key", s.List(ctx, "", func(objectstore.ObjectInfo) error { return nil }), "access denied")
}

func wantPermanent(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !objectstore.IsPermanent(err) {
		t.Errorf("%s = %v, want a permanent error", what, err)
		return
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("%s = %q, want it to mention %q", what, err, msg)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: message spans several lines: %q", what, err)
	}
	if errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("%s: permanent error also matches ErrNotFound", what)
	}
}

func TestNewUsesDefaultCredentialChain(t *testing.T) {
	cfg := configFor(t)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cfg.AccessKey, cfg.SecretKey = "", ""
	s := newStore(t, cfg)
	ctx := t.Context()
	if err := s.CheckBucket(ctx); err != nil {
		t.Fatalf("CheckBucket with credentials from the environment: %v", err)
	}
	if err := s.Put(ctx, "k", []byte("v"), objectstore.PutOptions{}); err != nil {
		t.Fatalf("Put with credentials from the environment: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	valid := s3store.DefaultConfig()
	valid.Bucket = "b"
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	d := s3store.DefaultConfig()
	if d.Region != "us-east-1" || d.MaxAttempts != 5 || d.MaxBackoff != time.Second || d.RequestTimeout != 4*time.Second {
		t.Errorf("DefaultConfig() = %+v", d)
	}
	cases := []struct {
		field string
		edit  func(*s3store.Config)
	}{
		{"Bucket", func(c *s3store.Config) { c.Bucket = "" }},
		{"Region", func(c *s3store.Config) { c.Region = "" }},
		{"SecretKey", func(c *s3store.Config) { c.AccessKey = "a" }},
		{"AccessKey", func(c *s3store.Config) { c.SecretKey = "s" }},
		{"MaxAttempts", func(c *s3store.Config) { c.MaxAttempts = 0 }},
		{"MaxBackoff", func(c *s3store.Config) { c.MaxBackoff = 0 }},
		{"RequestTimeout", func(c *s3store.Config) { c.RequestTimeout = -time.Second }},
		{"Endpoint", func(c *s3store.Config) { c.Endpoint = "localhost:9000" }},
		{"Endpoint", func(c *s3store.Config) { c.Endpoint = "ftp://host" }},
	}
	for _, c := range cases {
		cfg := valid
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("config with a bad %s: Validate() = %v", c.field, err)
		}
		if _, err := s3store.New(context.Background(), cfg); err == nil {
			t.Errorf("New accepted a config with a bad %s", c.field)
		}
	}
}

// Close drops pooled connections (gofakes3 keeps connections alive;
// versitygw by default does not).
func TestCloseReleasesConnections(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("close"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	cfg := s3store.DefaultConfig()
	cfg.Endpoint = srv.URL
	cfg.AccessKey, cfg.SecretKey = "fake", "fake"
	cfg.Bucket = "close"
	cfg.PathStyle = true
	before := goleak.IgnoreCurrent()
	s, err := s3store.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "k", []byte("v"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "k", 0, -1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}
