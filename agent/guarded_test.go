package agent_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// guardedServer is an agent behind a real gRPC server built with
// agent.GRPCServerOptions, logging into a buffer.
type guardedServer struct {
	conn   *grpc.ClientConn
	topics floev1.TopicServiceClient
	log    floev1.LogServiceClient
	logs   *syncBuffer
	store  *objectstore.Faulty
	ag     *agent.Agent
	lis    *agenttest.Agent // more connections: lis.DialContext
}

type guardedConfig struct {
	agent     func(*agent.Config, *batcher.Config)
	meta      func(metadata.Store) metadata.Store       // wraps the agent's metadata store
	committer func(batcher.Committer) batcher.Committer // wraps the batcher's committer
	store     func(objectstore.Store) objectstore.Store // wraps the faulty store the agent and batcher use
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex // protects buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startGuarded(t *testing.T, gc guardedConfig) *guardedServer {
	t.Helper()
	sq := harnessMeta(context.Background(), t)
	t.Cleanup(func() { sq.Close() }) // after the agent's stop
	var meta metadata.Store = sq
	if gc.meta != nil {
		meta = gc.meta(sq)
	}
	o := harnessOptions(gc.agent)
	if gc.committer != nil {
		o.Committer = gc.committer(sq)
	}
	store := objectstore.WithFaults(harnessObjects(t), objectstore.FaultConfig{})
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	o.AgentOptions.Logger = log
	o.ServerOptions = agent.GRPCServerOptions(o.Agent, log)
	var objects objectstore.Store = store
	if gc.store != nil {
		objects = gc.store(store)
	}
	a := agenttest.Start(t, meta, objects, o)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return a.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &guardedServer{conn: conn, topics: floev1.NewTopicServiceClient(conn), log: floev1.NewLogServiceClient(conn), logs: logs, store: store,
		ag: a.Agent, lis: a}
}

func (s *guardedServer) createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	if _, err := s.topics.CreateTopic(context.Background(), &floev1.CreateTopicRequest{Name: name, Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
}

// errorInfo returns the floe ErrorInfo detail of err, or nil.
func errorInfo(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == "floe" {
			return ei
		}
	}
	return nil
}

// wantStatus fails unless err has code c, ErrorInfo reason (if not ""),
// and a message containing every part.
func wantStatus(t *testing.T, what string, err error, c interface{ String() string }, reason string, parts ...string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code().String() != c.String() {
		t.Fatalf("%s: got %v (%q), want %v", what, st.Code(), st.Message(), c)
	}
	if reason != "" {
		if ei := errorInfo(err); ei == nil || ei.GetReason() != reason {
			t.Fatalf("%s: ErrorInfo %v, want reason %s", what, ei, reason)
		}
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Fatalf("%s: message %q does not say %q", what, st.Message(), p)
		}
	}
}

// dial opens another connection to the server, with opts.
func (s *guardedServer) dial(t *testing.T, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///bufnet", append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
