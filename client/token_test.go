package client_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// TestWithTokenNeedsTLS: Dial refuses WithToken on a plaintext connection
// (the token never crosses in clear);
// WithTokenOverPlaintext sends "authorization: Bearer TOKEN".
func TestWithTokenNeedsTLS(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // protects seen
	var seen []string
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		seen = append(seen, strings.Join(md.Get("authorization"), ";"))
		mu.Unlock()
		return &floev1.ListTopicsResponse{}, nil
	}))
	floev1.RegisterTopicServiceServer(srv, floev1.UnimplementedTopicServiceServer{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if c, err := client.Dial(lis.Addr().String(), client.WithToken("floe_secret")); err == nil || !strings.Contains(err.Error(), "transport level security") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial WithToken over plaintext: %v, want refused", err)
	}
	c, err := client.Dial(lis.Addr().String(), client.WithTokenOverPlaintext("floe_secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Topics.ListTopics(ctx, &floev1.ListTopicsRequest{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "Bearer floe_secret" {
		t.Fatalf("server saw %q, want one call with Bearer floe_secret", seen)
	}
}
