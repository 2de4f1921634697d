package main

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// The GroupService is registered by the late agent too: before the agent
// is set its methods answer Unavailable, not Unimplemented.
func TestLateAgentServesGroups(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	(&lateAgent{}).register(gs)
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	defer func() { gs.Stop(); <-done }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := floev1.GroupService_ServiceDesc
	for _, m := range d.Methods {
		err := conn.Invoke(ctx, "/"+d.ServiceName+"/"+m.MethodName, &emptypb.Empty{}, &emptypb.Empty{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s/%s: %v, want Unavailable", d.ServiceName, m.MethodName, err)
		}
	}
}
