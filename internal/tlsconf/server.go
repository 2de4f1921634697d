package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// Server serves one listener's TLS: the handshakes take the certificate
// and client CAs it last loaded, and look at the files again at most once
// per ReloadInterval. A new pair that does not load (a key not yet
// written, a mismatch) is logged and the previous one kept; established
// connections are never touched.
type Server struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex  // protects the fields below
	current *tls.Config // what handshakes get; rebuilt on a change
	loaded  []fileStamp // the files' stamps when current was built
	tried   []fileStamp // the stamps of the last attempt (failed ones included)
	checked time.Time   // when the files were last looked at
	failed  uint64      // reloads that did not load
}

// fileStamp is what tells a changed file: size, modification time and
// inode (a Kubernetes secret volume swaps a symlink).
type fileStamp struct {
	size  int64
	mtime time.Time
	sys   any
	err   bool
}

func (a fileStamp) same(b fileStamp) bool {
	return a.size == b.size && a.mtime.Equal(b.mtime) && a.err == b.err && sameSys(a.sys, b.sys)
}

// NewServer loads cfg's files (an error names what failed) and returns
// the listener's TLS. log, optional, hears reloads and failed ones.
func NewServer(cfg Config, log *slog.Logger) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, now: time.Now}
	stamps := s.stamps()
	current, err := s.build()
	if err != nil {
		return nil, err
	}
	s.current, s.loaded, s.tried, s.checked = current, stamps, stamps, s.now()
	return s, nil
}

// TLSConfig is the listener's tls.Config: each handshake takes the
// certificate current at its start.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: s.cfg.MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.config(), nil
		},
	}
}

// Listener wraps lis: its connections speak TLS with TLSConfig (the
// handshake happens on the first read or write).
func (s *Server) Listener(lis net.Listener) net.Listener {
	return tls.NewListener(lis, s.TLSConfig())
}

// Certificate is the leaf certificate handshakes present now.
func (s *Server) Certificate() *x509.Certificate {
	return s.config().Certificates[0].Leaf
}

// FailedReloads counts the changed files that did not load (the previous
// certificate kept serving).
func (s *Server) FailedReloads() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// config returns the current configuration, reloading the files first
// when ReloadInterval has passed since they were last looked at and they
// changed.
func (s *Server) config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.checked) < s.cfg.ReloadInterval {
		return s.current
	}
	s.checked = now
	stamps := s.stamps()
	if sameStamps(stamps, s.tried) {
		return s.current // unchanged, or the same files that failed already
	}
	s.tried = stamps
	next, err := s.build()
	if err != nil {
		s.failed++
		s.log.Warn("tls: new certificate not loaded; the previous one stays", "cert", s.cfg.CertFile, "err", err)
		return s.current
	}
	s.current, s.loaded = next, stamps
	s.log.Info("tls: certificate reloaded", "cert", s.cfg.CertFile, "subject", next.Certificates[0].Leaf.Subject.String(),
		"not_after", next.Certificates[0].Leaf.NotAfter)
	return s.current
}

// build loads the files into a handshake configuration.
func (s *Server) build() (*tls.Config, error) {
	cert, err := loadPair(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: s.cfg.MinVersion, Certificates: []tls.Certificate{cert}}
	if s.cfg.ClientCAFile != "" {
		pool, err := loadPool(s.cfg.ClientCAFile)
		if err != nil {
			return nil, err
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// stamps looks at the configured files.
func (s *Server) stamps() []fileStamp {
	var out []fileStamp
	for _, p := range []string{s.cfg.CertFile, s.cfg.KeyFile, s.cfg.ClientCAFile} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			out = append(out, fileStamp{err: true})
			continue
		}
		out = append(out, fileStamp{size: fi.Size(), mtime: fi.ModTime(), sys: inode(fi)})
	}
	return out
}

func sameStamps(a, b []fileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].same(b[i]) {
			return false
		}
	}
	return true
}
