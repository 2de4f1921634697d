package agent_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// fuzzMethod is one RPC of the agent's services.
type fuzzMethod struct {
	name   string
	stream *grpc.StreamDesc // nil: unary
}

func agentMethods() []fuzzMethod {
	var out []fuzzMethod
	for _, d := range []grpc.ServiceDesc{floev1.TopicService_ServiceDesc, floev1.LogService_ServiceDesc, floev1.GroupService_ServiceDesc} {
		for _, m := range d.Methods {
			out = append(out, fuzzMethod{name: "/" + d.ServiceName + "/" + m.MethodName})
		}
		for i := range d.Streams {
			out = append(out, fuzzMethod{name: "/" + d.ServiceName + "/" + d.Streams[i].StreamName, stream: &d.Streams[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// FuzzRequestValidators sends requests of any bytes to every RPC of an
// agent (SQLite and the in-memory store; the server options floe agent
// uses): the agent never panics (a
// panic in a handler ends the process) and answers each with a status a
// client can act on, never Unknown or Internal.
func FuzzRequestValidators(f *testing.F) {
	methods := agentMethods()
	conn := fuzzAgent(f)
	seeds := map[string][]proto.Message{
		"/floe.v1.TopicService/CreateTopic": {&floev1.CreateTopicRequest{Name: "u", Partitions: 2, Config: map[string]string{"retention.ms": "1h"}},
			&floev1.CreateTopicRequest{Name: "", Partitions: -1}, &floev1.CreateTopicRequest{Name: "v", Partitions: 1, Config: map[string]string{"value.schema": "{"}}},
		"/floe.v1.TopicService/AlterTopicConfig":  {&floev1.AlterTopicConfigRequest{Name: "t", Set: map[string]string{"retention.ms": "x"}, Remove: []string{"nope"}}},
		"/floe.v1.TopicService/DeleteRecords":     {&floev1.DeleteRecordsRequest{Topic: "t", Partition: 1, Offset: -7}},
		"/floe.v1.TopicService/DescribePlacement": {&floev1.DescribePlacementRequest{Topic: "t", Zone: string(make([]byte, 300))}},
		"/floe.v1.LogService/Produce": {&floev1.ProduceRequest{Topic: "t", Records: []*floev1.Record{{Value: []byte("v"), Headers: []*floev1.Header{{Key: "h"}}}}},
			&floev1.ProduceRequest{Topic: "t", Partition: proto.Int32(9), Records: []*floev1.Record{{NullValue: true, Value: []byte("x")}}, Compression: 99},
			&floev1.ProduceRequest{Topic: "t", ProducerId: proto.Int64(1), ProducerEpoch: -1, BaseSequence: -1, Records: []*floev1.Record{{}}}},
		"/floe.v1.LogService/Fetch":           {&floev1.FetchRequest{Topic: "t", Partition: 0, Offset: 0, MaxBytes: -1, MaxWaitMs: 10}, &floev1.FetchRequest{Topic: "t", Partition: -1, Offset: -1}},
		"/floe.v1.LogService/ListOffsets":     {&floev1.ListOffsetsRequest{Topic: "t", Partitions: []int32{0, 0, -1}, Spec: 77}},
		"/floe.v1.LogService/Subscribe":       {&floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0, 5}, Offsets: map[int32]int64{0: -3}, MaxBytes: -1}},
		"/floe.v1.GroupService/Heartbeat":     {&floev1.GroupHeartbeatRequest{Group: "g", Subscription: []string{"t", "t", ""}, SessionTimeoutMs: -1, MemberEpoch: -5}},
		"/floe.v1.GroupService/CommitOffsets": {&floev1.CommitOffsetsRequest{Group: "g", MemberId: "m", Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: -1}}}},
		"/floe.v1.GroupService/ResetOffsets":  {&floev1.ResetOffsetsRequest{Group: "g", Topics: []string{"t"}, Spec: 42, Shift: -1 << 62}},
	}
	for i, m := range methods {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte{0x0a, 0x01, 't', 0x10, 0x01})
		for _, msg := range seeds[m.name] {
			b, err := proto.Marshal(msg)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), b)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		m := methods[int(which)%len(methods)]
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := callRaw(ctx, conn, m, body)
		switch c := status.Code(err); c {
		case codes.Unknown, codes.Internal:
			t.Fatalf("%s(%x): %v: not a status a client can act on", m.name, body, err)
		}
	})
}

// callRaw sends body to m and reads every answer until the call ends.
func callRaw(ctx context.Context, conn *grpc.ClientConn, m fuzzMethod, body []byte) error {
	if m.stream == nil {
		return conn.Invoke(ctx, m.name, body, &emptypb.Empty{}, grpc.ForceCodecV2(rawCodec{}))
	}
	s, err := conn.NewStream(ctx, m.stream, m.name, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	if err := s.SendMsg(body); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(&emptypb.Empty{}); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// fuzzAgent runs an agent on SQLite and the in-memory store, with topic
// "t" of two partitions, until the end of f; it returns a connection.
func fuzzAgent(f *testing.F) *grpc.ClientConn {
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "meta.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { meta.Close() }) // after the node's cleanup
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = time.Millisecond
	n := startNode(f, meta, objectstore.NewMemory(), acfg, bcfg, agent.GRPCServerOptions(acfg, nil)...) // as floe agent serves
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return n.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	if _, err := floev1.NewTopicServiceClient(conn).CreateTopic(ctx, &floev1.CreateTopicRequest{Name: "t", Partitions: 2}); err != nil {
		f.Fatal(err)
	}
	return conn
}
