package services

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ServerTLS is a server's certificate and key files (PEM), for a service
// started with TLS.
type ServerTLS struct {
	CertFile, KeyFile string
}

// installPostgresTLS copies the pair into the cluster's data directory as
// server.crt and server.key (PostgreSQL refuses a key others can read),
// owned by the cluster's user, and returns the postmaster's settings.
func installPostgresTLS(t ServerTLS, data string, cred *syscall.Credential) ([]string, error) {
	for _, f := range []struct {
		from, to string
		mode     os.FileMode
	}{{t.CertFile, "server.crt", 0o644}, {t.KeyFile, "server.key", 0o600}} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			return nil, fmt.Errorf("services: postgres TLS: %w", err)
		}
		to := filepath.Join(data, f.to)
		if err := os.WriteFile(to, b, f.mode); err != nil {
			return nil, fmt.Errorf("services: postgres TLS: %w", err)
		}
		if cred != nil {
			if err := os.Chown(to, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("services: postgres TLS: chown %s: %w", to, err)
			}
		}
	}
	return []string{"-c", "ssl=on", "-c", "ssl_cert_file=server.crt", "-c", "ssl_key_file=server.key"}, nil
}

// StartVersitygwTLS starts versitygw like StartVersitygw, serving HTTPS
// with the pair in t; roots, the CAs of its certificate, are what Client
// trusts. Its Endpoint is an https:// URL.
func StartVersitygwTLS(ctx context.Context, log *slog.Logger, t ServerTLS, roots *x509.CertPool) (*S3Server, error) {
	const access, secret = "floebenchaccess", "floebenchsecretkey"
	s, err := startS3(ctx, s3Spec{name: "versitygw", module: VersitygwModule, access: access, secret: secret, timeout: 20 * time.Second,
		args: func(addr, data string) ([]string, error) {
			return []string{"--access", access, "--secret", secret, "--port", addr, "--cert", t.CertFile, "--key", t.KeyFile,
				"--quiet", "--keep-alive", "posix", data}, nil
		},
		ready: func(ctx context.Context, addr string, p *Process) error { return WaitTCP(ctx, addr, p) },
	}, log)
	if err != nil {
		return nil, err
	}
	s.Endpoint = "https" + s.Endpoint[len("http"):]
	s.RootCAs = roots
	return s, nil
}
