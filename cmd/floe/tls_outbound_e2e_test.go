package main_test

import (
	"context"
	"crypto/x509"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/services"
)

// TestAgentOutboundTLS: an agent reaches PostgreSQL with
// sslmode=verify-full and a CA file given in the URL (passed through to
// pgx as it is) and S3 over HTTPS with -s3-ca-file: it serves produce and
// fetch, and the compactor, on the same stores, writes a topic's Iceberg
// table (the Iceberg writer trusts -s3-ca-file too). With a foreign CA in
// either place the agent refuses to start, naming the certificate problem.
func TestAgentOutboundTLS(t *testing.T) {
	dir := t.TempDir()
	pki, foreign := testPKI(t, dir, "backends"), testPKI(t, dir, "foreign")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pcfg := services.DefaultPostgresConfig()
	pcfg.Durable, pcfg.TLS = false, &services.ServerTLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}
	pg, err := services.StartPostgres(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	dsn, err := pg.CreateDatabase(ctx, "floe_tls")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA.Cert)
	s3, err := services.StartVersitygwTLS(ctx, nil, services.ServerTLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, roots)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Stop()
	if err := s3.CreateBucket(ctx, "floe-tls"); err != nil {
		t.Fatal(err)
	}
	verifyFull := func(ca string) string {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("sslmode", "verify-full")
		q.Set("sslrootcert", ca)
		u.RawQuery = q.Encode()
		return u.String()
	}
	args := func(pgCA, s3CA string) []string {
		return []string{"agent", "-postgres-url", verifyFull(pgCA), "-s3-bucket", "floe-tls", "-s3-endpoint", s3.Endpoint,
			"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-ca-file", s3CA}
	}

	for _, tc := range []struct {
		name   string
		pg, s3 string
	}{{"foreign PostgreSQL CA", foreign.CAFile, pki.CAFile}, {"foreign S3 CA", pki.CAFile, foreign.CAFile}} {
		cmd := exec.Command(floeBin, append(args(tc.pg, tc.s3), "-fail-fast", "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0")...)
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		last := strings.TrimSpace(errb.String())
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		if err == nil || !strings.Contains(last, "unknown authority") {
			t.Errorf("%s: %v, last line %q; want a refusal naming the unknown authority", tc.name, err, last)
		}
	}

	a := startFloe(t, args(pki.CAFile, pki.CAFile)...)
	c := dialT(t, a.addr)
	startCompactor(t, append(args(pki.CAFile, pki.CAFile)[1:], "-interval", "100ms")...)
	if _, err := c.CreateTopic(ctx, "out", 1, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(ctx, "out", 0, client.Value(nil, []byte("over tls"))); err != nil {
		t.Fatal(err)
	}
	f, err := c.Fetch(ctx, "out", 0, 0, 1<<20, 0)
	if err != nil || len(f.GetRecords()) != 1 || string(f.GetRecords()[0].GetValue()) != "over tls" {
		t.Fatalf("fetch: %v %v", f, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := floeCLI(t, "topic", "describe", "out", "-addr", a.addr)
		if strings.Contains(out, "the table trails the log by 0 offsets") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compactor wrote no table over TLS:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
