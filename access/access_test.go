package access_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	"github.com/floe-broker/floe/auth"
)

func TestCertPrincipal(t *testing.T) {
	full := &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, DNSNames: []string{"svc.example", "b"}, EmailAddresses: []string{"carol@example.com"}}
	bare := &x509.Certificate{}
	for _, tc := range []struct {
		cert *x509.Certificate
		rule access.CertRule
		want string // "" refused
	}{
		{full, access.CertCN, "alice"},
		{full, access.CertSANDNS, "svc.example"},
		{full, access.CertSANEmail, "carol@example.com"},
		{bare, access.CertCN, ""},
		{bare, access.CertSANDNS, ""},
		{bare, access.CertSANEmail, ""},
		{nil, access.CertCN, ""},
		{full, access.CertRule(9), ""},
	} {
		p, err := access.CertPrincipal(tc.cert, tc.rule)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%v %v: got %v, want refused", tc.cert != nil, tc.rule, p)
			}
			continue
		}
		if err != nil || p.Name != tc.want {
			t.Errorf("%v: got %v, %v; want %s", tc.rule, p, err, tc.want)
		}
	}
	for _, s := range []string{"cn", "san-dns", "san-email"} {
		r, err := access.ParseCertRule(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseCertRule(%q) = %v, %v", s, r, err)
		}
	}
	if _, err := access.ParseCertRule("subject"); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("ParseCertRule(subject): %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer  abc ", "abc", true},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"Bearer   ", "", false},
		{"", "", false},
	} {
		got, ok := access.BearerToken(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	v := accesstest.NewVerifier()
	v.Add("good", "alice")
	v.Fail("old", errors.Join(auth.ErrUnauthenticated, errors.New("token expired")))
	v.Fail("gone", errors.Join(auth.ErrUnauthenticated, errors.New("token revoked")))
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "bob"}}
	ctx := context.Background()
	for _, tc := range []struct {
		header string
		cert   *x509.Certificate
		want   string // "" refused
	}{
		{"Bearer good", nil, "alice"},
		{"Bearer good", cert, "alice"},
		{"", cert, "bob"},
		{"Bearer old", cert, ""},
		{"Bearer gone", nil, ""},
		{"Bearer nope", nil, ""},
		{"Basic Ym9iOnB3", nil, ""},
		{"", nil, ""},
	} {
		p, err := access.Authenticate(ctx, v, access.CertCN, tc.header, tc.cert)
		if tc.want == "" {
			if !access.IsUnauthenticated(err) {
				t.Errorf("%q: got %v, %v; want unauthenticated", tc.header, p, err)
			}
			continue
		}
		if err != nil || p.Name != tc.want {
			t.Errorf("%q: got %v, %v; want %s", tc.header, p, err, tc.want)
		}
	}
}

func TestGuardDenialsBounded(t *testing.T) {
	store := accesstest.NewStore()
	store.Allow("User:alice", auth.OpRead, auth.Topic("orders"))
	cfg := access.DefaultConfig()
	cfg.Enabled, cfg.Superusers, cfg.MaxDenialKeys = true, []string{"User:root"}, 3
	now := time.Unix(1000, 0)
	reg := prometheus.NewRegistry()
	logs := &countHandler{}
	g, err := access.NewGuard(cfg, store, access.GuardOptions{Registry: reg, Logger: newLogger(logs), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, root := auth.Principal{Name: "alice"}, auth.Principal{Name: "bob"}, auth.Principal{Name: "root"}
	if !g.Allowed("grpc", alice, auth.OpRead, auth.Topic("orders")) || !g.Allowed("grpc", root, auth.OpDelete, auth.Cluster()) {
		t.Fatal("allowed principal refused")
	}
	for range 100 {
		if g.Allowed("grpc", bob, auth.OpRead, auth.Topic("orders")) {
			t.Fatal("bob allowed")
		}
	}
	if logs.n != 1 {
		t.Fatalf("100 equal denials logged %d times, want 1", logs.n)
	}
	now = now.Add(cfg.DenialLogInterval)
	g.Allowed("grpc", bob, auth.OpRead, auth.Topic("orders"))
	if logs.n != 2 {
		t.Fatalf("after the interval: %d logs, want 2", logs.n)
	}
	for i := range 50 { // distinct keys: the map stays at MaxDenialKeys
		g.Allowed("kafka", bob, auth.OpWrite, auth.Topic(string(rune('a'+i))))
	}
	if n := g.DenialKeys(); n > cfg.MaxDenialKeys {
		t.Fatalf("denial log holds %d keys, bound %d", n, cfg.MaxDenialKeys)
	}
	if got := testutil.ToFloat64(g.DeniedCounter().WithLabelValues("grpc", "READ", "TOPIC")); got != 101 {
		t.Fatalf("floe_auth_denied_total{grpc,READ,TOPIC} = %v, want 101", got)
	}
	if got := testutil.ToFloat64(g.DeniedCounter().WithLabelValues("kafka", "WRITE", "TOPIC")); got != 50 {
		t.Fatalf("floe_auth_denied_total{kafka,WRITE,TOPIC} = %v, want 50", got)
	}
	if g.Permits(bob, auth.OpDescribe, auth.Topic("x")) {
		t.Fatal("Permits allowed bob")
	}
	off, _ := access.NewGuard(access.DefaultConfig(), nil, access.GuardOptions{})
	if !off.Allowed("grpc", bob, auth.OpDelete, auth.Cluster()) {
		t.Fatal("auth off refused")
	}
}

func TestConfigValidate(t *testing.T) {
	c := access.DefaultConfig()
	c.Superusers = []string{"root"}
	if err := c.Validate(); err == nil {
		t.Error("superuser without User: accepted")
	}
	if _, err := access.NewGuard(access.Config{Enabled: true, CertPrincipal: access.CertCN, DenialLogInterval: time.Second, MaxDenialKeys: 1}, nil, access.GuardOptions{}); err == nil {
		t.Error("enabled without an Authorizer accepted")
	}
	su, err := access.ParseSuperusers(" User:a, User:b ,")
	if err != nil || len(su) != 2 || su[1] != "User:b" {
		t.Errorf("ParseSuperusers: %v, %v", su, err)
	}
}

// A nil Guard is auth off: Config answers the zero Config, never panics
// (the Kafka listener asks it on every fetch over TLS).
func TestNilGuardConfig(t *testing.T) {
	var g *access.Guard
	if g.Enabled() {
		t.Fatal("nil guard enabled")
	}
	if c := g.Config(); c.Enabled || c.CertPrincipal != 0 {
		t.Fatalf("nil guard config %+v", c)
	}
}
