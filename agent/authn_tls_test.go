package agent_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/access/accesstest"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// TestGRPCAuthClientCertificate: over mTLS the verified certificate's
// common name is the principal; a certificate from another CA never gets
// that far, and without a token or certificate the call is Unauthenticated.
func TestGRPCAuthClientCertificate(t *testing.T) {
	ca := accesstest.Cert(t, "floe-ca", nil)
	pool := accesstest.Pool(ca)
	server := accesstest.Cert(t, "bufnet", &ca)
	srv := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pool,
		ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12})
	client := func(cert *tls.Certificate) credentials.TransportCredentials {
		c := &tls.Config{RootCAs: pool, ServerName: "bufnet", MinVersion: tls.VersionTLS12}
		if cert != nil {
			c.Certificates = []tls.Certificate{*cert}
		}
		return credentials.NewTLS(c)
	}
	alice := accesstest.Cert(t, "alice", &ca)
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
	other := accesstest.Cert(t, "other-ca", nil)
	mallory := accesstest.Cert(t, "alice", &other)
	o := startAuthNodeWith(t, srv, client(&mallory))
	if _, err := floev1.NewTopicServiceClient(o.conn).DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "t"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("foreign certificate: %v", err)
	}
}

func contains(err error, sub string) bool {
	return strings.Contains(status.Convert(err).Message(), sub)
}
