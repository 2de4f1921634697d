package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// rawCodec sends []byte as the message, so a test can send what no
// protobuf encoder would (invalid UTF-8 in a string).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// badTopic is a ProduceRequest whose topic (field 1) is not UTF-8, with one
// record.
func badTopic() []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("bad\xff\xfetopic"))
	rec := protowire.AppendTag(nil, 2, protowire.BytesType)
	rec = protowire.AppendBytes(rec, []byte("v"))
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, rec)
}

// Invalid UTF-8 in a request's strings is InvalidArgument (gRPC would say
// Internal), on unary calls and in a produce stream, which stays usable.
func TestInvalidUTF8IsInvalidArgument(t *testing.T) {
	s := startGuarded(t, guardedConfig{})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	var resp floev1.ProduceResponse
	err := s.conn.Invoke(ctx, floev1.LogService_Produce_FullMethodName, badTopic(), &resp, grpc.ForceCodecV2(rawCodec{}))
	wantStatus(t, "produce", err, codes.InvalidArgument, "", "UTF-8")

	name := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("\xc3\x28"))
	var d floev1.DescribeTopicResponse
	err = s.conn.Invoke(ctx, floev1.TopicService_DescribeTopic_FullMethodName, name, &d, grpc.ForceCodecV2(rawCodec{}))
	wantStatus(t, "describe", err, codes.InvalidArgument, "", "UTF-8")

	stream, err := s.conn.NewStream(ctx, &floev1.LogService_ServiceDesc.Streams[0], floev1.LogService_ProduceStream_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	bad := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 41)
	bad = protowire.AppendBytes(protowire.AppendTag(bad, 2, protowire.BytesType), badTopic())
	good, err := proto.Marshal(&floev1.ProduceStreamRequest{RequestId: 42, Request: &floev1.ProduceRequest{Topic: "t", Records: []*floev1.Record{{Value: []byte("v")}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range [][]byte{bad, good} {
		if err := stream.SendMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	for want := uint64(41); want <= 42; want++ {
		var r floev1.ProduceStreamResponse
		if err := stream.RecvMsg(&r); err != nil {
			t.Fatalf("the stream broke: %v", err)
		}
		switch {
		case r.GetRequestId() != want:
			t.Fatalf("answer for request %d, want %d", r.GetRequestId(), want)
		case want == 41 && (codes.Code(r.GetErrorCode()) != codes.InvalidArgument || !strings.Contains(r.GetErrorMessage(), "UTF-8")):
			t.Fatalf("bad request answered %v", &r)
		case want == 42 && r.GetErrorCode() != 0:
			t.Fatalf("good request answered %v", &r)
		}
	}
	_ = stream.CloseSend()
}

// leakyStore fails as a PostgreSQL store does when the database is
// unreachable or the agent's SQL is wrong: the errors name the database
// user, database and address.
type leakyStore struct {
	metadata.Store
}

const leak = "user=floe dbname=x host=127.0.0.1:5432"

// sqlError is a database error with its SQLSTATE, like pgconn.PgError.
type sqlError struct{ code, msg string }

func (e *sqlError) Error() string    { return e.msg + " (SQLSTATE " + e.code + ")" }
func (e *sqlError) SQLState() string { return e.code }

func (s leakyStore) ListTopics(context.Context) ([]metadata.Topic, error) {
	return nil, fmt.Errorf("failed to connect to `%s`: %w", leak,
		&net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connection refused", Addr: "127.0.0.1:5432"}})
}

func (s leakyStore) DescribeTopic(context.Context, string) (metadata.TopicDescription, error) {
	return metadata.TopicDescription{}, fmt.Errorf("describe topic (%s): %w", leak, &sqlError{"42703", `column "x" does not exist`})
}

func (s leakyStore) InitProducer(context.Context) (int64, int16, error) {
	return 0, 0, fmt.Errorf("init producer (%s): %w", leak, syscall.ECONNRESET)
}

// Server-side failures reach the client without internal details, with a
// request id that the log holds with the full error and the RPC name.
func TestNoInternalDetailsToClients(t *testing.T) {
	s := startGuarded(t, guardedConfig{meta: func(m metadata.Store) metadata.Store { return leakyStore{m} }})
	ctx := context.Background()
	check := func(what string, err error, c codes.Code, rpc string) {
		t.Helper()
		wantStatus(t, what, err, c, "", "request id")
		msg := status.Convert(err).Message()
		for _, secret := range []string{"user=", "dbname", "127.0.0.1", "5432", "SQLSTATE", "column", "connection refused"} {
			if strings.Contains(msg, secret) {
				t.Fatalf("%s: message %q leaks %q", what, msg, secret)
			}
		}
		id := errorInfo(err).GetMetadata()["request_id"]
		if id == "" || !strings.Contains(msg, id) {
			t.Fatalf("%s: request id %q not in ErrorInfo and message %q", what, id, msg)
		}
		var line string
		for _, l := range strings.Split(s.logs.String(), "\n") {
			if strings.Contains(l, id) {
				if line != "" {
					t.Fatalf("%s: request id %s logged twice:\n%s", what, id, s.logs.String())
				}
				line = l
			}
		}
		if !strings.Contains(line, leak) || !strings.Contains(line, rpc) || !strings.Contains(line, "level=ERROR") {
			t.Fatalf("%s: log line for %s lacks the cause or RPC %s: %q", what, id, rpc, line)
		}
	}
	_, err := s.topics.ListTopics(ctx, &floev1.ListTopicsRequest{})
	check("connection refused", err, codes.Unavailable, floev1.TopicService_ListTopics_FullMethodName)
	_, err = s.topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "t"})
	check("SQL error", err, codes.Internal, floev1.TopicService_DescribeTopic_FullMethodName)
	_, err = s.log.InitProducer(ctx, &floev1.InitProducerRequest{})
	check("connection reset", err, codes.Unavailable, floev1.LogService_InitProducer_FullMethodName)

	// A stream call, failing before its first message.
	err = errors.New("no error")
	sub, err2 := s.log.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0}})
	if err2 == nil {
		_, err = sub.Recv()
	}
	check("subscribe", err, codes.Internal, floev1.LogService_Subscribe_FullMethodName)

	// One request of a produce stream.
	ps, err := s.log.ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Send(&floev1.ProduceStreamRequest{RequestId: 5, Request: &floev1.ProduceRequest{Topic: "t", Records: []*floev1.Record{{}}}}); err != nil {
		t.Fatal(err)
	}
	r, err := ps.Recv()
	if err != nil {
		t.Fatal(err)
	}
	msg := r.GetErrorMessage()
	if codes.Code(r.GetErrorCode()) != codes.Internal || strings.Contains(msg, "dbname") || !strings.Contains(msg, "request id") {
		t.Fatalf("produce stream answer %v", r)
	}
	id := msg[strings.LastIndex(msg, " ")+1 : len(msg)-1]
	if !strings.HasSuffix(id, "-5") || !strings.Contains(s.logs.String(), "request_id="+id) {
		t.Fatalf("stream request id %q not logged:\n%s", id, s.logs.String())
	}
	_ = ps.CloseSend()
}
