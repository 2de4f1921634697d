package tlsconf

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestGRPCRefusedCertificateIsReported: a gRPC client over TLS 1.3 whose
// certificate is refused hears why (the server's alert), every time, not a
// broken pipe or a reset: the server lingers on the refused connection.
func TestGRPCRefusedCertificateIsReported(t *testing.T) {
	dir := t.TempDir()
	a := pki(t, dir, "a")
	cfg := DefaultConfig()
	cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile = a.ServerCert, a.ServerKey, a.CAFile
	s, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(s.GRPCCredentials()))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	call := func(c ClientConfig) error {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(clientOf(t, c))))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := call(ClientConfig{CAFile: a.CAFile, CertFile: a.ClientCert, KeyFile: a.ClientKey}); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	for i := range 20 {
		err := call(ClientConfig{CAFile: a.CAFile})
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Fatalf("attempt %d without a client certificate: %v, want the server's alert", i, err)
		}
	}
}
