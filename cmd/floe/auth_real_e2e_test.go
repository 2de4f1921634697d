package main_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata/postgres"
)

// TestAuthEndToEndOnTheStore runs floe dev with auth.enabled on its real
// SQLite metadata store (no fakes): the admin's token bootstrapped with
// `floe token create -data` before the first start, then tokens, ACLs and
// a SCRAM user made through the CLI, and each client refused or served as
// its ACLs say — the CLI over plaintext on loopback and then over TLS,
// franz-go over SASL SCRAM-SHA-256 and SASL_SSL, kcat over SASL_SSL. A
// revoked token is refused by the same agent within -auth-refresh and by
// the next agent process.
func TestAuthEndToEndOnTheStore(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	cli := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, stdin, args...) // tls_e2e_test.go
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := cli(stdin, args...)
		if code != 0 {
			t.Fatalf("floe %v: exit %d, stderr %q", args, code, errs)
		}
		return out
	}
	refused := func(want, stdin string, args ...string) {
		t.Helper()
		code, out, errs := cli(stdin, args...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, want) {
			t.Errorf("floe %v: exit %d, stdout %q, stderr %q; want a non-zero exit and one line with %q", args, code, out, errs, want)
		}
	}
	tokenRE := regexp.MustCompile(`^floe_([0-9a-f]{16})_[0-9a-f]{64}\n$`)

	// Bootstrap: no agent, no token; the principal is a superuser.
	out := must("", "token", "create", "-principal", "User:admin", "-ttl", "1h", "-data", data)
	if !tokenRE.MatchString(out) {
		t.Fatalf("bootstrap token: %q", out)
	}
	adminFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(adminFile, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}

	serverArgs := []string{"dev", "-data", data, "-auth-enabled", "-auth-superusers", "User:admin", "-auth-refresh", "1s", "-kafka-listen", "127.0.0.1:0"}
	dev := startFloe(t, serverArgs...)
	kaddr := dev.kafkaAddr(t)
	at := []string{"-addr", dev.addr}
	admin := append([]string{"-token-file", adminFile}, at...)

	must("", append([]string{"topic", "create", "orders", "-partitions", "1"}, admin...)...)
	out = must("", append([]string{"token", "create", "-principal", "User:alice"}, admin...)...)
	m := tokenRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("alice's token: %q", out)
	}
	alice, aliceID := strings.TrimSpace(out), m[1]
	must("", append([]string{"acl", "add", "-principal", "User:alice", "-topic", "orders", "-operation", "read"}, admin...)...)
	must("", append([]string{"acl", "add", "-principal", "User:carol", "-topic", "orders", "-operation", "read,write"}, admin...)...)
	must("carol-pw\n", append([]string{"user", "create", "carol", "-mechanism", "SCRAM-SHA-256"}, admin...)...)
	must("alice-pw\n", append([]string{"user", "create", "alice", "-mechanism", "SCRAM-SHA-256"}, admin...)...)

	// gRPC through the CLI, plaintext on loopback.
	refused("Unauthenticated: auth: unauthenticated: no credential (a bearer token or a client certificate): give -token, -token-file or FLOE_TOKEN", "x\n", append([]string{"produce", "orders"}, at...)...)
	refused("Unauthenticated", "", append([]string{"topic", "list"}, at...)...)
	must("a\nb\n", append([]string{"produce", "orders"}, admin...)...)
	if out := must("", append([]string{"consume", "orders", "-token", alice}, at...)...); out != "a\nb\n" {
		t.Errorf("alice consumed %q, want a, b", out)
	}
	refused("PermissionDenied", "x\n", append([]string{"produce", "orders", "-token", alice}, at...)...)
	refused("refusing to send the token in plaintext to 192.0.2.1:7070", "", "topic", "list", "-addr", "192.0.2.1:7070", "-token", alice)

	// Kafka over SASL SCRAM-SHA-256, plaintext.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scramRoundTrip(ctx, t, kaddr, nil, "carol", "carol-pw", "k1", 2)
	scramRefused(ctx, t, kaddr, nil)

	must("", append([]string{"token", "revoke", aliceID}, admin...)...)
	// The same agent refuses it once its token cache's trust (-auth-refresh
	// 1s) has run out; it was accepted just before the revocation.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, _, errs := cli("", append([]string{"topic", "list", "-token", alice}, at...)...)
		if code != 0 && strings.Contains(errs, "Unauthenticated") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked token still accepted by the same agent after 20 s (refresh 1s): exit %d, %q", code, errs)
		}
	}

	// The next agent process, with TLS on gRPC and Kafka: the revoked token
	// is refused; SASL_SSL for franz-go and kcat.
	stopProc(t, dev)
	pki := testPKI(t, dir, "floe") // tls_e2e_test.go
	dev = startFloe(t, append(serverArgs, "-grpc-tls-cert", pki.ServerCert, "-grpc-tls-key", pki.ServerKey,
		"-kafka-tls-cert", pki.ServerCert, "-kafka-tls-key", pki.ServerKey)...)
	kaddr = dev.kafkaAddr(t) // its own ports
	at = []string{"-addr", dev.addr, "-ca", pki.CAFile}
	admin = append([]string{"-token-file", adminFile}, at...)
	refused("Unauthenticated", "", append([]string{"consume", "orders", "-token", alice}, at...)...)
	if out := must("", append([]string{"token", "list"}, admin...)...); !regexp.MustCompile(aliceID + `\s+User:alice\s.*revoked`).MatchString(out) {
		t.Errorf("token list after revoke:\n%s", out)
	}
	tc := tlsClient(t, pki.CAFile, "", "")
	scramRoundTrip(ctx, t, kaddr, tc, "carol", "carol-pw", "k2", 4)
	scramRefused(ctx, t, kaddr, tc)
	aliceKafka, err := kgo.NewClient(append(kafkaOpts(kaddr, tc), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer aliceKafka.Close()
	if err := aliceKafka.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice produced over SASL_SSL with read only: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	kcatSASLSSL(ctx, t, kaddr, pki.CAFile)
}

// scramRoundTrip produces value prefix+"-0", prefix+"-1" to orders as user
// over SASL SCRAM-SHA-256 (over TLS when tc is set) and reads the topic
// back from the start until it has total records.
func scramRoundTrip(ctx context.Context, t *testing.T, addr string, tc *tls.Config, user, pass, prefix string, total int) {
	t.Helper()
	cl, err := kgo.NewClient(append(kafkaOpts(addr, tc), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()),
		kgo.RequestRetries(10), kgo.RetryTimeout(30*time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := []*kgo.Record{{Topic: "orders", Value: []byte(prefix + "-0")}, {Topic: "orders", Value: []byte(prefix + "-1")}}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("%s produce over SCRAM (tls %v): %v", user, tc != nil, err)
	}
	var got []string
	for len(got) < total+2 { // the two the CLI produced first
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s consume over SCRAM: %q, then %v", user, got, err)
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("%s consume over SCRAM: %v", user, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if last := got[len(got)-2:]; last[0] != prefix+"-0" || last[1] != prefix+"-1" {
		t.Fatalf("%s consumed %q", user, got)
	}
}

// scramRefused: a client without SASL, and one with a wrong password, are
// refused.
func scramRefused(ctx context.Context, t *testing.T, addr string, tc *tls.Config) {
	t.Helper()
	for _, extra := range [][]kgo.Opt{nil, {kgo.SASL(scram.Auth{User: "carol", Pass: "wrong"}.AsSha256Mechanism())}} {
		cl, err := kgo.NewClient(append(kafkaOpts(addr, tc), extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = cl.ProduceSync(pctx, &kgo.Record{Topic: "orders", Value: []byte("anon")}).FirstErr()
		cancel()
		cl.Close()
		if err == nil {
			t.Errorf("produce with SASL %v (tls %v) succeeded", extra != nil, tc != nil)
		}
	}
}

// kcatSASLSSL: kcat (librdkafka) over SASL_SSL with SCRAM-SHA-256 as carol
// produces and reads back; with a wrong password it gets nothing.
func kcatSASLSSL(ctx context.Context, t *testing.T, addr, caFile string) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat is not installed (.ci/run installs it): %v", err)
		}
		t.Log("kcat not installed: the SASL_SSL check of librdkafka is left out")
		return
	}
	base := []string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "ssl.ca.location=" + caFile, "-X", "sasl.username=carol"}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	prod := exec.CommandContext(kctx, "kcat", append(base, "-X", "sasl.password=carol-pw", "-P", "-t", "orders", "-p", "0")...)
	prod.Stdin = strings.NewReader("from-kcat\n")
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat produce over SASL_SSL: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(kctx, "kcat", append(base, "-X", "sasl.password=carol-pw", "-C", "-t", "orders", "-o", "beginning", "-e", "-q")...).CombinedOutput()
	if got := strings.Fields(string(out)); err != nil || len(got) == 0 || got[len(got)-1] != "from-kcat" {
		t.Fatalf("kcat consume over SASL_SSL: %v\n%s", err, out)
	}
	bctx, bcancel := context.WithTimeout(ctx, 15*time.Second)
	defer bcancel()
	out, err = exec.CommandContext(bctx, "kcat", append(base, "-X", "sasl.password=wrong", "-C", "-t", "orders", "-o", "beginning", "-e", "-q")...).CombinedOutput()
	if err == nil || strings.Contains(string(out), "from-kcat") {
		t.Errorf("kcat with a wrong password: %v\n%s", err, out)
	}
}

// stopProc stops p (SIGTERM) and waits for it to exit.
func stopProc(t *testing.T, p *proc) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal(fmt.Sprintf("floe did not stop:\n%s", p.logText()))
	}
}

// TestTokenBootstrapOnPostgres: `floe token create -store URL` writes a
// token for the principal straight into a PostgreSQL metadata store (no
// agent), where the agents' verifier finds it; a store it cannot open is
// one line and exit 1.
func TestTokenBootstrapOnPostgres(t *testing.T) {
	url := testenv.Postgres(t)
	code, out, errs := runCLI(t, "", "token", "create", "-principal", "User:admin", "-ttl", "0", "-store", url)
	if code != 0 || !regexp.MustCompile(`^floe_[0-9a-f]{16}_[0-9a-f]{64}\n$`).MatchString(out) || !strings.Contains(errs, "expires never") {
		t.Fatalf("token create -store: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, url, postgres.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v, err := auth.NewTokenVerifier(st, auth.DefaultVerifierConfig())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Verify(ctx, strings.TrimSpace(out)); err != nil || p.String() != "User:admin" {
		t.Fatalf("the bootstrapped token verifies as %v, %v; want User:admin", p, err)
	}
	code, out, errs = runCLI(t, "", "token", "create", "-principal", "User:admin", "-store", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2")
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "flag -store") {
		t.Errorf("unreachable -store: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
