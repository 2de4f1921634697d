package tlsconf

import (
	"crypto/tls"
	"errors"
)

// ClientConfig is a client's TLS: the CAs it trusts and the certificate it
// presents, both optional.
type ClientConfig struct {
	// CAFile is a PEM bundle of the CAs that sign the server's certificate
	// (empty: the system's roots).
	CAFile string
	// CertFile and KeyFile are the client's certificate and key, for a
	// server that asks for one (mutual TLS). Both or neither.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server's certificate
	// (empty: the host dialed).
	ServerName string
}

// validate names the first bad field.
func (c ClientConfig) validate() error {
	switch {
	case c.CertFile == "" && c.KeyFile != "":
		return errors.New("tlsconf: client CertFile: required with KeyFile")
	case c.CertFile != "" && c.KeyFile == "":
		return errors.New("tlsconf: client KeyFile: required with CertFile")
	}
	return nil
}

// Client returns the tls.Config of c: TLS 1.2 at least, the server's
// certificate verified against CAFile (or the system's roots).
func Client(c ClientConfig) (*tls.Config, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pool, err := loadPool(c.CAFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := loadPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
