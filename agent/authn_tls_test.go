package agent_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// certFor issues a certificate for cn signed by ca (nil: self-signed CA).
func certFor(t *testing.T, cn string, ca *tls.Certificate, isCA bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, DNSNames: []string{"bufnet"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.Leaf, ca.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestGRPCAuthClientCertificate: over mTLS the verified certificate's
// common name is the principal; a certificate from another CA never gets
// that far, and without a token or certificate the call is Unauthenticated.
func TestGRPCAuthClientCertificate(t *testing.T) {
	ca := certFor(t, "floe-ca", nil, true)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	server := certFor(t, "bufnet", &ca, false)
	srv := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pool,
		ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12})
	client := func(cert *tls.Certificate) credentials.TransportCredentials {
		c := &tls.Config{RootCAs: pool, ServerName: "bufnet", MinVersion: tls.VersionTLS12}
		if cert != nil {
			c.Certificates = []tls.Certificate{*cert}
		}
		return credentials.NewTLS(c)
	}
	alice := certFor(t, "alice", &ca, false)
	n := startAuthNodeWith(t, srv, client(&alice))
	ctx := context.Background()
	if _, err := floev1.NewTopicServiceClient(n.conn).CreateTopic(as(ctx, "root"), &floev1.CreateTopicRequest{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	tc := floev1.NewTopicServiceClient(n.conn)
	if _, err := tc.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "t"}); status.Code(err) != codes.PermissionDenied || !contains(err, "User:alice") {
		t.Fatalf("alice's certificate without an ACL: %v", err)
	}
	n.acls.Allow("User:alice", auth.OpDescribe, auth.Topic("t"))
	if _, err := tc.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "t"}); err != nil {
		t.Fatalf("alice's certificate with DESCRIBE: %v", err)
	}

	// The same server, dialed without a certificate: Unauthenticated.
	m := startAuthNodeWith(t, srv, client(nil))
	if _, err := floev1.NewTopicServiceClient(m.conn).ListTopics(ctx, &floev1.ListTopicsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no certificate, no token: %v", err)
	}
	// A certificate of another CA, even naming alice, names no one: Go's
	// client does not offer it to a server that asks for floe-ca's (and a
	// server would refuse its chain), so the call is Unauthenticated.
	other := certFor(t, "other-ca", nil, true)
	mallory := certFor(t, "alice", &other, false)
	o := startAuthNodeWith(t, srv, client(&mallory))
	if _, err := floev1.NewTopicServiceClient(o.conn).DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "t"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("foreign certificate: %v", err)
	}
}

func contains(err error, sub string) bool {
	return strings.Contains(status.Convert(err).Message(), sub)
}
