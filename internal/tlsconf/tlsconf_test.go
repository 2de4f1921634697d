package tlsconf

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.CertFile, ok.KeyFile = "c", "k"
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // "" : valid
	}{
		{"off", func(c *Config) { *c = DefaultConfig() }, ""},
		{"on", func(*Config) {}, ""},
		{"mtls", func(c *Config) { c.ClientCAFile = "ca" }, ""},
		{"tls13", func(c *Config) { c.MinVersion = tls.VersionTLS13 }, ""},
		{"key without cert", func(c *Config) { c.CertFile = "" }, "CertFile"},
		{"cert without key", func(c *Config) { c.KeyFile = "" }, "KeyFile"},
		{"client CA alone", func(c *Config) { *c = DefaultConfig(); c.ClientCAFile = "ca" }, "CertFile"},
		{"tls11", func(c *Config) { c.MinVersion = tls.VersionTLS11 }, "MinVersion"},
		{"no interval", func(c *Config) { c.ReloadInterval = 0 }, "ReloadInterval"},
	} {
		c := ok
		tc.mod(&c)
		err := c.validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: validate() = %v, want error naming %q", tc.name, err, tc.want)
		}
	}
	if err := (ClientConfig{KeyFile: "k"}).validate(); err == nil || !strings.Contains(err.Error(), "CertFile") {
		t.Errorf("client key without cert: %v", err)
	}
	if err := (ClientConfig{CertFile: "c"}).validate(); err == nil || !strings.Contains(err.Error(), "KeyFile") {
		t.Errorf("client cert without key: %v", err)
	}
}

// pki is a CA and a server pair written under dir.
func pki(t *testing.T, dir, name string) *tlstest.Files {
	t.Helper()
	f, err := tlstest.WriteFiles(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// echoServer serves s's TLS on a free port: each line read is written back.
func echoServer(t *testing.T, s *Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := s.Listener(lis)
	var wg sync.WaitGroup
	t.Cleanup(func() { tl.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return lis.Addr().String()
}

// dial makes a TLS connection and one echo round trip.
func dial(addr string, tc *tls.Config) (*tls.Conn, error) {
	c, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		return nil, err
	}
	if err := echo(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func echo(c *tls.Conn) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func clientOf(t *testing.T, c ClientConfig) *tls.Config {
	t.Helper()
	tc, err := Client(c)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestReload rotates the certificate under a running listener: the open
// connection keeps working, handshakes take the new pair once the interval
// passed, and a broken new pair leaves the last good one serving.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	a := pki(t, dir, "a")
	cfg := DefaultConfig()
	cfg.CertFile, cfg.KeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	copyFile(t, a.ServerCert, cfg.CertFile)
	copyFile(t, a.ServerKey, cfg.KeyFile)
	s, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := time.Now()
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func() { mu.Lock(); clock = clock.Add(2 * cfg.ReloadInterval); mu.Unlock() }
	addr := echoServer(t, s)

	// Both CAs trusted, so that the test sees which certificate it got.
	b := pki(t, dir, "b")
	pool := x509.NewCertPool()
	pool.AddCert(a.CA.Cert)
	pool.AddCert(b.CA.Cert)
	both := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	old, err := dial(addr, both)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	issuer := func() string {
		c, err := dial(addr, both)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Issuer.CommonName
	}

	// The new pair: not seen before the interval passed, seen after.
	copyFile(t, b.ServerCert, cfg.CertFile)
	copyFile(t, b.ServerKey, cfg.KeyFile)
	if got := issuer(); got != "a test CA" {
		t.Fatalf("before the reload interval: certificate from %q, want the old one", got)
	}
	advance()
	if got := issuer(); got != "b test CA" {
		t.Fatalf("after rotation: certificate from %q, want the new one", got)
	}
	if err := echo(old); err != nil {
		t.Fatalf("connection made before the rotation: %v", err)
	}

	// A half-written rotation (a's certificate with b's key) is refused: b stays.
	copyFile(t, a.ServerCert, cfg.CertFile)
	advance()
	if got := issuer(); got != "b test CA" {
		t.Fatalf("after a mismatched pair: certificate from %q, want the last good one", got)
	}
	if n := s.FailedReloads(); n != 1 {
		t.Fatalf("FailedReloads %d after a mismatched pair, want 1", n)
	}
	// Its key arrives: a serves again.
	copyFile(t, a.ServerKey, cfg.KeyFile)
	advance()
	if got := issuer(); got != "a test CA" {
		t.Fatalf("once the pair matches: certificate from %q, want a's", got)
	}
	if got := s.Certificate().Issuer.CommonName; got != "a test CA" {
		t.Fatalf("Certificate() from %q", got)
	}
	// A removed file: the last good pair stays.
	if err := os.Remove(cfg.KeyFile); err != nil {
		t.Fatal(err)
	}
	advance()
	if got := issuer(); got != "a test CA" {
		t.Fatalf("after the key was removed: certificate from %q", got)
	}
	if n := s.FailedReloads(); n != 2 {
		t.Fatalf("FailedReloads %d, want 2", n)
	}
}

// TestRefusals: TLS 1.1, a plaintext client, an unknown server CA, and under
// mutual TLS a missing, a foreign and an expired client certificate.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	a, foreign := pki(t, dir, "a"), pki(t, dir, "foreign")
	cfg := DefaultConfig()
	cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile = a.ServerCert, a.ServerKey, a.CAFile
	s, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, s)
	expired, err := a.CA.Issue(tlstest.Options{CommonName: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	expCert, expKey, err := expired.Write(dir, "expired")
	if err != nil {
		t.Fatal(err)
	}

	good := clientOf(t, ClientConfig{CAFile: a.CAFile, CertFile: a.ClientCert, KeyFile: a.ClientKey})
	if c, err := dial(addr, good); err != nil {
		t.Fatalf("a client of the CA: %v", err)
	} else {
		c.Close()
	}
	tls11 := good.Clone()
	tls11.MinVersion, tls11.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	for _, tc := range []struct {
		name string
		tc   *tls.Config
		want string
	}{
		{"tls 1.1", tls11, "protocol version"},
		{"unknown server CA", clientOf(t, ClientConfig{CAFile: foreign.CAFile, CertFile: a.ClientCert, KeyFile: a.ClientKey}), "unknown authority"},
		{"no client certificate", clientOf(t, ClientConfig{CAFile: a.CAFile}), "certificate required"},
		{"foreign client certificate", clientOf(t, ClientConfig{CAFile: a.CAFile, CertFile: foreign.ClientCert, KeyFile: foreign.ClientKey}), "certificate required"}, // Go sends no certificate the server's CA list excludes
		{"expired client certificate", clientOf(t, ClientConfig{CAFile: a.CAFile, CertFile: expCert, KeyFile: expKey}), "expired certificate"},
	} {
		c, err := dial(addr, tc.tc)
		if err == nil {
			c.Close()
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Plaintext: the handshake fails, nothing is echoed.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = nc.Write([]byte("ping\nping\nping\nping\nping\n"))
	buf := make([]byte, 64)
	n, _ := nc.Read(buf)
	if strings.Contains(string(buf[:n]), "ping") {
		t.Fatalf("plaintext client got an echo: %q", buf[:n])
	}
}

func TestNewServerErrors(t *testing.T) {
	dir := t.TempDir()
	a := pki(t, dir, "a")
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("no pem here"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CertFile, cfg.KeyFile = a.ServerCert, filepath.Join(dir, "missing.key")
	if _, err := NewServer(cfg, nil); err == nil || !strings.Contains(err.Error(), "missing.key") {
		t.Errorf("missing key: %v", err)
	}
	cfg.KeyFile, cfg.ClientCAFile = a.ServerKey, empty
	if _, err := NewServer(cfg, nil); err == nil || !strings.Contains(err.Error(), "empty.pem") {
		t.Errorf("CA file without certificates: %v", err)
	}
	if _, err := Client(ClientConfig{CAFile: empty}); err == nil || !strings.Contains(err.Error(), "empty.pem") {
		t.Errorf("client CA file without certificates: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlstest.WriteFileAtomic(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
