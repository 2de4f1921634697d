package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcmd "google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata"
)

// TestDevWithAuth runs floe dev with auth.enabled (the ACL and token store
// faked through authBackends) and checks every listener: HTTP probes open
// and the rest 401/403/200, gRPC Unauthenticated / PermissionDenied / OK,
// Kafka refused without SASL and served with it.
func TestDevWithAuth(t *testing.T) {
	st, v := accesstest.NewStore(), accesstest.NewVerifier()
	v.Add("tok-root", "root")
	v.Add("tok-bob", "bob")
	if err := st.SetPassword("root", auth.ScramSHA256, "pw-root"); err != nil {
		t.Fatal(err)
	}
	saved := authBackends
	t.Cleanup(func() { authBackends = saved })
	authBackends = func(context.Context, metadata.Store, time.Duration, *slog.Logger) (auth.Authorizer, access.TokenVerifier, auth.Store, func(), error) {
		return st, v, st, func() {}, nil
	}
	addrFile := filepath.Join(t.TempDir(), "addrs.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, []string{"-auth-enabled", "-auth-superusers", "User:root", "-data", filepath.Join(t.TempDir(), "data"),
			"-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0", "-kafka-listen", "127.0.0.1:0", "-addr-file", addrFile}, io.Discard, io.Discard)
	}()
	// Every listener bound (Kafka's once the stores are open): the ports
	// the server took.
	bound := waitAddrFile(t, addrFile, func(a listenAddrs) bool { return a.Kafka != "" })
	grpcAddr, httpAddr, kafkaAddr := bound.GRPC, bound.Metrics, bound.Kafka
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("floe dev: %v", err)
		}
	})
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", "http://"+httpAddr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(60 * time.Second)
	for get("/readyz", "") != 200 {
		if time.Now().After(deadline) {
			t.Fatal("floe dev not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{{"/healthz", "", 200}, {"/metrics", "", 401}, {"/metrics", "tok-bob", 403}, {"/metrics", "tok-root", 200}, {"/console/", "nope", 401}} {
		if got := get(tc.path, tc.token); got != tc.want {
			t.Errorf("GET %s as %q: %d, want %d", tc.path, tc.token, got, tc.want)
		}
	}

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tc, lc := floev1.NewTopicServiceClient(conn), floev1.NewLogServiceClient(conn)
	as := func(tok string) context.Context {
		return grpcmd.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	}
	if _, err := tc.ListTopics(context.Background(), &floev1.ListTopicsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("anonymous ListTopics: %v", err)
	}
	if _, err := tc.CreateTopic(as("tok-root"), &floev1.CreateTopicRequest{Name: "orders", Partitions: 1}); err != nil {
		t.Fatalf("root CreateTopic: %v", err)
	}
	if _, err := lc.Produce(as("tok-bob"), &floev1.ProduceRequest{Topic: "orders", Records: []*floev1.Record{{Value: []byte("x")}}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob Produce: %v", err)
	}

	anon, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := kadm.NewClient(anon).ListTopics(context.Background()); err == nil {
		t.Fatal("anonymous Kafka client listed topics")
	}
	root, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.SASL(scram.Auth{User: "root", Pass: "pw-root"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	td, err := kadm.NewClient(root).ListTopics(context.Background())
	if err != nil || !td.Has("orders") {
		t.Fatalf("root over SCRAM: %v, %v", td.Names(), err)
	}
	wrong, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.SASL(scram.Auth{User: "root", Pass: "nope"}.AsSha256Mechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if _, err := kadm.NewClient(wrong).ListTopics(context.Background()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong SCRAM password: %v", err)
	}
}
