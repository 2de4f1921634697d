package main_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

// readyGetter is how launch waits for a server: over HTTPS when args serve
// the HTTP listener with TLS (the certificate unchecked: this only waits
// for the process), else plain HTTP.
func readyGetter(args []string) (scheme string, get func(string) (*http.Response, error)) {
	if !slices.Contains(args, "-http-tls-cert") {
		return "http://", http.Get
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // waiting only
	return "https://", hc.Get
}

// testPKI writes a CA with a server and a client certificate under dir.
func testPKI(t *testing.T, dir, name string) *tlstest.Files {
	t.Helper()
	f, err := tlstest.WriteFiles(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// tlsClient is a client TLS configuration trusting caFile, presenting
// cert and key when given.
func tlsClient(t *testing.T, caFile, cert, key string) *tls.Config {
	t.Helper()
	tc, err := client.TLSConfig(caFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// peerName dials addr with TLS and returns the CN of the certificate the
// server presents.
func peerName(addr string, tc *tls.Config) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, tc)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// TestTLSRotationUnderLoad: the gRPC listener's certificate is replaced
// on disk while a producer and a subscriber run over one TLS connection.
// New connections get the new certificate within the reload interval, the
// established connection keeps serving (no new handshake), and after the
// agent restarts the client reconnects by itself and verifies the new
// certificate. Every acknowledged record is in the log, once, at its
// offset, and the subscriber saw each of them.
func TestTLSRotationUnderLoad(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("rotation CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := ca.WriteCert(caFile); err != nil {
		t.Fatal(err)
	}
	issue := func(cn string) {
		p, err := ca.Issue(tlstest.Options{CommonName: cn, Hosts: []string{"127.0.0.1", "localhost"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Write(dir, "tls"); err != nil {
			t.Fatal(err)
		}
	}
	issue("server-1")
	args := []string{"dev", "-data", t.TempDir(), "-grpc-tls-cert", filepath.Join(dir, "tls.crt"),
		"-grpc-tls-key", filepath.Join(dir, "tls.key"), "-tls-reload-interval", "100ms"}
	dev := startFloe(t, args...)

	var hmu sync.Mutex
	var handshakes []string // the server names the client verified, one per connection
	tc := tlsClient(t, caFile, "", "")
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		hmu.Lock()
		defer hmu.Unlock()
		handshakes = append(handshakes, cs.PeerCertificates[0].Subject.CommonName)
		return nil
	}
	seenHandshakes := func() []string { hmu.Lock(); defer hmu.Unlock(); return slices.Clone(handshakes) }
	c, err := client.Dial(dev.addr, client.WithTLS(tc))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const parts = 2
	if _, err := c.CreateTopic(ctx, "rot", parts, nil); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var amu sync.Mutex // protects acks, consumed, next
	var acks []acked
	consumed := map[string]bool{}
	next := map[int32]int64{0: 0, 1: 0}
	var consumeErr error
	nacks := func() int { amu.Lock(); defer amu.Unlock(); return len(acks) }
	wg.Add(2)
	go func() { // the producer: retries past failures, each record sent once
		defer wg.Done()
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			part := int32(seq % parts)
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := c.Produce(pctx, "rot", part, client.Value(nil, []byte(fmt.Sprintf("p0-%d", seq))))
			pcancel()
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			amu.Lock()
			acks = append(acks, acked{producer: 0, seq: seq, partition: part, offset: resp.GetOffsets()[0]})
			amu.Unlock()
		}
	}()
	go func() { // the subscriber: resubscribes where it stopped
		defer wg.Done()
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		go func() { <-stop; scancel() }()
		for sctx.Err() == nil {
			amu.Lock()
			offs := map[int32]int64{0: next[0], 1: next[1]}
			amu.Unlock()
			_ = c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "rot", Offsets: offs}, func(r *floev1.SubscribeResponse) error {
				amu.Lock()
				defer amu.Unlock()
				for _, rec := range r.GetRecords() {
					if rec.GetOffset() != next[r.GetPartition()] && consumeErr == nil {
						consumeErr = fmt.Errorf("partition %d: offset %d after %d", r.GetPartition(), rec.GetOffset(), next[r.GetPartition()])
					}
					next[r.GetPartition()] = rec.GetOffset() + 1
					consumed[string(rec.GetValue())] = true
				}
				return nil
			})
			select {
			case <-sctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	waitAcks := func(n int, what string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for nacks() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d records acknowledged, want %d (handshakes %v)", what, nacks(), n, seenHandshakes())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()

	waitAcks(30, "before the rotation")
	issue("server-2")
	deadline := time.Now().Add(15 * time.Second)
	for {
		name, err := peerName(dev.addr, tlsClient(t, caFile, "", ""))
		if err == nil && name == "server-2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new connections still get %q (%v) after the rotation", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitAcks(nacks()+30, "on the connection made before the rotation")
	if h := seenHandshakes(); !slices.Equal(h, []string{"server-1"}) {
		t.Fatalf("the established connection was replaced: handshakes %v", h)
	}

	// A restart drops the connection: the client makes a new one by itself.
	if err := dev.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-dev.done
	dev = startFloe(t, append(args, "-listen", dev.addr, "-metrics-listen", dev.metrics)...)
	waitAcks(nacks()+30, "after the restart")
	if h := seenHandshakes(); len(h) < 2 || h[len(h)-1] != "server-2" {
		t.Fatalf("after the restart: handshakes %v, want a reconnection to server-2", h)
	}
	halt()

	amu.Lock()
	got := slices.Clone(acks)
	amu.Unlock()
	verifyLog(t, c, "rot", parts, got)
	// The subscriber caught up on what it had not seen when it stopped.
	for p := int32(0); p < parts; p++ {
		for {
			f, err := c.Fetch(ctx, "rot", p, next[p], 1<<20, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.GetRecords()) == 0 {
				break
			}
			for _, r := range f.GetRecords() {
				consumed[string(r.GetValue())] = true
				next[p] = r.GetOffset() + 1
			}
		}
	}
	if consumeErr != nil {
		t.Fatal(consumeErr)
	}
	for _, a := range got {
		if v := fmt.Sprintf("p0-%d", a.seq); !consumed[v] {
			t.Fatalf("acknowledged %s not consumed", v)
		}
	}
	t.Logf("%d records acknowledged across the rotation and the restart; handshakes %v", len(got), seenHandshakes())
}

// runCLI runs a floe client command and returns its exit code and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(floeBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestTLSRefusalsAreClear: an agent with mutual TLS on gRPC. Each wrong
// way to connect — plaintext to its TLS port, TLS to a plaintext port, an
// unknown server CA, no client certificate, a foreign one, an expired one,
// TLS 1.1 — is refused with one line saying what is wrong; the right one
// works, through every client command's flags.
func TestTLSRefusalsAreClear(t *testing.T) {
	dir := t.TempDir()
	pki, foreign := testPKI(t, dir, "floe"), testPKI(t, dir, "foreign")
	expired, err := pki.CA.Issue(tlstest.Options{CommonName: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	expCert, expKey, err := expired.Write(dir, "expired")
	if err != nil {
		t.Fatal(err)
	}
	dev := startFloe(t, "dev", "-data", t.TempDir(), "-grpc-tls-cert", pki.ServerCert, "-grpc-tls-key", pki.ServerKey,
		"-grpc-tls-client-ca", pki.CAFile)
	good := []string{"-ca", pki.CAFile, "-cert", pki.ClientCert, "-key", pki.ClientKey}
	if code, out, errs := runCLI(t, "", append([]string{"topic", "create", "t", "-addr", dev.addr}, good...)...); code != 0 {
		t.Fatalf("topic create over mutual TLS: exit %d %s %s", code, out, errs)
	}
	// floe produce's -key is the records' key: its TLS key is -tls-key.
	if code, out, errs := runCLI(t, "a\nb\n", "produce", "t", "-addr", dev.addr, "-ca", pki.CAFile, "-cert", pki.ClientCert, "-tls-key", pki.ClientKey); code != 0 {
		t.Fatalf("produce over mutual TLS: exit %d %s %s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "", append([]string{"consume", "t", "-addr", dev.addr}, good...)...); code != 0 || out != "a\nb\n" {
		t.Fatalf("consume over mutual TLS: exit %d %q %s", code, out, errs)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"plaintext to the TLS port", []string{"-addr", dev.addr}, "does it require TLS? add -tls"},
		{"TLS to a plaintext port", append([]string{"-addr", dev.metrics}, good...), "does not speak TLS on this port"},
		{"unknown server CA", []string{"-addr", dev.addr, "-ca", foreign.CAFile, "-cert", pki.ClientCert, "-key", pki.ClientKey}, "no trusted CA signed"},
		{"system roots", []string{"-addr", dev.addr, "-tls"}, "no trusted CA signed"},
		{"no client certificate", []string{"-addr", dev.addr, "-ca", pki.CAFile}, "refused the client certificate"},
		{"foreign client certificate", []string{"-addr", dev.addr, "-ca", pki.CAFile, "-cert", foreign.ClientCert, "-key", foreign.ClientKey}, "refused the client certificate"},
		{"expired client certificate", []string{"-addr", dev.addr, "-ca", pki.CAFile, "-cert", expCert, "-key", expKey}, "refused the client certificate"},
		{"cert without key", []string{"-addr", dev.addr, "-ca", pki.CAFile, "-cert", pki.ClientCert}, "-key: is required with -cert"},
		{"missing CA file", []string{"-addr", dev.addr, "-ca", filepath.Join(dir, "nope.crt")}, "nope.crt"},
	} {
		code, out, errs := runCLI(t, "", append([]string{"topic", "list"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		t.Logf("%s: %s", tc.name, strings.TrimSpace(errs))
		if code == 0 || len(lines) != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want one line with %q", tc.name, code, out, errs, tc.want)
		}
	}
	old := tlsClient(t, pki.CAFile, pki.ClientCert, pki.ClientKey)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if _, err := peerName(dev.addr, old); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1 client: %v, want a protocol version refusal", err)
	}
}

// TestKafkaAndHTTPOverTLS: floe dev with TLS on its Kafka listener
// (mutual) and its HTTP listener: a franz-go client over TLS with a client
// certificate produces and consumes; plaintext, a client without
// certificate and TLS 1.1 are refused; /readyz answers over HTTPS and a
// plain HTTP request hears that the port is HTTPS. floe compactor serves
// its HTTP listener with TLS too.
func TestKafkaAndHTTPOverTLS(t *testing.T) {
	dir := t.TempDir()
	pki := testPKI(t, dir, "floe")
	dev := startFloe(t, "dev", "-data", t.TempDir(), "-kafka-listen", "127.0.0.1:0",
		"-kafka-tls-cert", pki.ServerCert, "-kafka-tls-key", pki.ServerKey, "-kafka-tls-client-ca", pki.CAFile,
		"-http-tls-cert", pki.ServerCert, "-http-tls-key", pki.ServerKey)
	kaddr := dev.kafkaAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kafkaTLSRoundTrip(ctx, t, kaddr, tlsClient(t, pki.CAFile, pki.ClientCert, pki.ClientKey))
	kcatSSL(ctx, t, kaddr, pki) // tls_kafka_e2e_test.go
	if err := kafkaPing(ctx, kaddr, nil); err == nil {
		t.Error("plaintext Kafka client to the TLS listener: answered")
	}
	if err := kafkaPing(ctx, kaddr, tlsClient(t, pki.CAFile, "", "")); err == nil {
		t.Error("Kafka client without a certificate: answered")
	}
	old := tlsClient(t, pki.CAFile, pki.ClientCert, pki.ClientKey)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	for _, addr := range []string{kaddr, dev.metrics} {
		if _, err := peerName(addr, old); err == nil || !strings.Contains(err.Error(), "protocol version") {
			t.Errorf("TLS 1.1 client to %s: %v, want a protocol version refusal", addr, err)
		}
	}

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsClient(t, pki.CAFile, "", "")}}
	httpsGet := func(url string) (int, string) {
		t.Helper()
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := httpsGet("https://" + dev.metrics + "/readyz"); code != 200 {
		t.Fatalf("https /readyz: %d %s", code, body)
	}
	if code, body := httpsGet("https://" + dev.metrics + "/metrics"); code != 200 ||
		!strings.Contains(body, `floe_tls_certificate_expiry_timestamp_seconds{listener="kafka"}`) ||
		!strings.Contains(body, `floe_tls_certificate_expiry_timestamp_seconds{listener="http"}`) {
		t.Fatalf("https /metrics: %d, or no certificate expiry of the kafka and http listeners", code)
	}
	resp, err := http.Get("http://" + dev.metrics + "/readyz")
	if err != nil {
		t.Fatalf("plain HTTP to the HTTPS listener: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "HTTPS") {
		t.Fatalf("plain HTTP to the HTTPS listener: %d %q", resp.StatusCode, b)
	}

	// floe compactor, its stores unreachable (port 1 on the loopback:
	// privileged, nothing listens there): its HTTP listener is up over TLS.
	comp := startCompactorProc(t, "-postgres-url", "postgres://floe@"+deadAddr+"/floe", "-s3-bucket", "b",
		"-s3-endpoint", "http://"+deadAddr, "-s3-access-key", "a", "-s3-secret-key", "s", "-s3-path-style",
		"-http-tls-cert", pki.ServerCert, "-http-tls-key", pki.ServerKey)
	if code, body := httpsGet("https://" + comp.metrics + "/healthz"); code != 200 {
		t.Fatalf("compactor https /healthz: %d %s", code, body)
	}
}
