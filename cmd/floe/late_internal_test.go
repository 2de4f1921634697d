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

// Before the agent is set, every method of floe's services (topics, log,
// groups) answers Unavailable ("starting"), never Unimplemented.
func TestLateAgentAnswersEveryMethodUnavailable(t *testing.T) {
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
	n := 0
	for _, d := range []grpc.ServiceDesc{floev1.TopicService_ServiceDesc, floev1.LogService_ServiceDesc, floev1.GroupService_ServiceDesc, floev1.AdminService_ServiceDesc} {
		for _, m := range d.Methods {
			err := conn.Invoke(ctx, "/"+d.ServiceName+"/"+m.MethodName, &emptypb.Empty{}, &emptypb.Empty{})
			if status.Code(err) != codes.Unavailable {
				t.Errorf("%s/%s: %v, want Unavailable", d.ServiceName, m.MethodName, err)
			}
			n++
		}
		for _, sd := range d.Streams {
			s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: sd.ServerStreams, ClientStreams: sd.ClientStreams},
				"/"+d.ServiceName+"/"+sd.StreamName)
			if err == nil {
				_ = s.SendMsg(&emptypb.Empty{})
				_ = s.CloseSend()
				err = s.RecvMsg(&emptypb.Empty{})
			}
			if status.Code(err) != codes.Unavailable {
				t.Errorf("%s/%s: %v, want Unavailable", d.ServiceName, sd.StreamName, err)
			}
			n++
		}
	}
	if n < 18 { // every method of the three services
		t.Fatalf("only %d methods checked", n)
	}
}
