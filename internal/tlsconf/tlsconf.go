// Package tlsconf is floe's TLS configuration: a listener's certificate
// and key files, an optional client CA bundle (mutual TLS), TLS 1.2 at
// least, and certificates re-read when their files change, without a
// restart and without touching established connections (the files are
// looked at by the handshakes, at most once per ReloadInterval). The
// client side builds a tls.Config from a CA file and an optional client
// certificate.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrNoCertificates means a CA file holds no PEM certificate.
var ErrNoCertificates = errors.New("tlsconf: no PEM certificate in the file")

// Config is one listener's TLS: off while every file is empty.
type Config struct {
	// CertFile and KeyFile are the PEM certificate (chain) and private key
	// the listener presents. Both or neither.
	CertFile, KeyFile string
	// ClientCAFile, optional, is a PEM bundle of the CAs that sign client
	// certificates: set, every client must present a certificate it
	// verifies (mutual TLS).
	ClientCAFile string
	// MinVersion is the oldest TLS version accepted (tls.VersionTLS12 or
	// tls.VersionTLS13).
	MinVersion uint16
	// ReloadInterval is how often, at most, a handshake looks at the
	// files' sizes and times (one stat each) to pick up a new certificate.
	ReloadInterval time.Duration
}

// DefaultConfig returns TLS off, TLS 1.2 at least once on, and files
// checked at most once a second.
func DefaultConfig() Config {
	return Config{MinVersion: tls.VersionTLS12, ReloadInterval: time.Second}
}

// Enabled reports whether the listener speaks TLS.
func (c Config) Enabled() bool {
	return c.CertFile != "" || c.KeyFile != "" || c.ClientCAFile != ""
}

// validate names the first bad field.
func (c Config) validate() error {
	switch {
	case c.CertFile == "" && c.KeyFile != "":
		return errors.New("tlsconf: CertFile: required with KeyFile")
	case c.CertFile != "" && c.KeyFile == "":
		return errors.New("tlsconf: KeyFile: required with CertFile")
	case c.CertFile == "" && c.ClientCAFile != "":
		return errors.New("tlsconf: CertFile: required with ClientCAFile (a client CA needs the listener's own certificate and key)")
	case c.MinVersion != tls.VersionTLS12 && c.MinVersion != tls.VersionTLS13:
		return fmt.Errorf("tlsconf: MinVersion: %#x must be TLS 1.2 (%#x) or TLS 1.3 (%#x)", c.MinVersion, tls.VersionTLS12, tls.VersionTLS13)
	case c.ReloadInterval <= 0:
		return fmt.Errorf("tlsconf: ReloadInterval: %v must be positive", c.ReloadInterval)
	}
	return nil
}

// Validate checks c: nil, or an error naming the bad field.
func (c Config) Validate() error { return c.validate() }

// loadPool reads a PEM CA bundle.
func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w %s", ErrNoCertificates, path)
	}
	return pool, nil
}

// loadPair reads a certificate and its key, naming the files on failure.
func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}
