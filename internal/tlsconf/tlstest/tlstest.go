// Package tlstest makes throwaway certificate authorities and the
// certificates they sign, written as PEM files, for tests and floe-bench:
// nothing here is for production keys.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a self-signed CA named name, valid from an hour ago for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM is the CA's certificate in PEM.
func (ca *CA) CertPEM() []byte { return ca.pem }

// WriteCert writes the CA's certificate to path.
func (ca *CA) WriteCert(path string) error { return os.WriteFile(path, ca.pem, 0o644) }

// Options shape an issued certificate.
type Options struct {
	// CommonName is the subject's CN.
	CommonName string
	// Hosts are its DNS names and IP addresses (server certificates).
	Hosts []string
	// Client makes a client certificate (ExtKeyUsageClientAuth) instead of
	// a server one.
	Client bool
	// NotBefore and NotAfter bound its validity (zero: an hour ago, a day
	// from now).
	NotBefore, NotAfter time.Time
}

// Pair is an issued certificate and its key, in PEM.
type Pair struct {
	Cert            *x509.Certificate
	CertPEM, KeyPEM []byte
}

// Issue signs a new certificate.
func (ca *CA) Issue(o Options) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	nb, na := o.NotBefore, o.NotAfter
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour)
	}
	if na.IsZero() {
		na = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: o.CommonName},
		NotBefore: nb, NotAfter: na, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}, nil
}

// Write writes the pair as dir/name.crt and dir/name.key (the key 0600)
// and returns their paths.
func (p *Pair) Write(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := WriteFileAtomic(certFile, p.CertPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := WriteFileAtomic(keyFile, p.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// WriteFileAtomic writes data to path through a rename, so that a reader
// sees the old file or the new one, never half of it.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp%d", path, time.Now().UnixNano())
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// serial is a random 128-bit serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// Files are a test PKI written to a folder: a CA, a server certificate for
// 127.0.0.1 and localhost, and a client certificate, all signed by the CA.
type Files struct {
	CA                    *CA
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// WriteFiles makes a CA named name with a server and a client certificate
// under dir.
func WriteFiles(dir, name string) (*Files, error) {
	ca, err := NewCA(name + " test CA")
	if err != nil {
		return nil, err
	}
	f := &Files{CA: ca, CAFile: filepath.Join(dir, name+"-ca.crt")}
	if err := ca.WriteCert(f.CAFile); err != nil {
		return nil, err
	}
	srv, err := ca.Issue(Options{CommonName: name + " server", Hosts: []string{"127.0.0.1", "localhost", "::1"}})
	if err != nil {
		return nil, err
	}
	if f.ServerCert, f.ServerKey, err = srv.Write(dir, name+"-server"); err != nil {
		return nil, err
	}
	cl, err := ca.Issue(Options{CommonName: name + " client", Client: true})
	if err != nil {
		return nil, err
	}
	if f.ClientCert, f.ClientKey, err = cl.Write(dir, name+"-client"); err != nil {
		return nil, err
	}
	return f, nil
}
