package access

import (
	"crypto/x509"
	"fmt"

	"github.com/floe-broker/floe/auth"
)

// CertRule says which field of a verified client certificate names the
// principal (setting auth.cert_principal).
type CertRule int8

const (
	// CertCN: the subject's common name.
	CertCN CertRule = iota + 1
	// CertSANDNS: the first DNS subject alternative name.
	CertSANDNS
	// CertSANEmail: the first email subject alternative name.
	CertSANEmail
)

// ParseCertRule accepts "cn", "san-dns" or "san-email".
func ParseCertRule(s string) (CertRule, error) {
	switch s {
	case "cn":
		return CertCN, nil
	case "san-dns":
		return CertSANDNS, nil
	case "san-email":
		return CertSANEmail, nil
	}
	return 0, fmt.Errorf("%w: certificate principal rule %q (want cn, san-dns or san-email)", auth.ErrInvalid, s)
}

func (r CertRule) String() string {
	switch r {
	case CertCN:
		return "cn"
	case CertSANDNS:
		return "san-dns"
	case CertSANEmail:
		return "san-email"
	}
	return "unknown"
}

// CertPrincipal is the principal a verified client certificate names by
// rule. A certificate without that field is refused (ErrUnauthenticated):
// it names no one.
func CertPrincipal(cert *x509.Certificate, rule CertRule) (auth.Principal, error) {
	if cert == nil {
		return auth.Principal{}, ErrNoCredential
	}
	var name string
	switch rule {
	case CertCN:
		name = cert.Subject.CommonName
	case CertSANDNS:
		if len(cert.DNSNames) > 0 {
			name = cert.DNSNames[0]
		}
	case CertSANEmail:
		if len(cert.EmailAddresses) > 0 {
			name = cert.EmailAddresses[0]
		}
	default:
		return auth.Principal{}, fmt.Errorf("%w: certificate principal rule %d", auth.ErrInvalid, rule)
	}
	p, err := auth.ParsePrincipal(auth.PrincipalPrefix + name)
	if err != nil {
		return auth.Principal{}, fmt.Errorf("%w: client certificate has no %s naming a principal", auth.ErrUnauthenticated, rule)
	}
	return p, nil
}
