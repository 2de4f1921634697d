package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// cutProxy forwards TCP connections to an address; cut closes them all,
// freeze drops what they carry from then on (a half-open connection).
type cutProxy struct {
	lis    net.Listener
	to     string
	frozen atomic.Bool
	mu     sync.Mutex // protects conns
	conns  []net.Conn
	wg     sync.WaitGroup
	closed chan struct{}
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{lis: lis, to: to, closed: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); p.copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() { lis.Close(); p.cut(); p.wg.Wait() })
	return p
}

// copy forwards from src to dst until src ends, dropping what comes while
// frozen.
func (p *cutProxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.frozen.Load() {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// dropAfterCommit cuts the proxy instead of sending the first produce
// answer: the records are committed, the answer never arrives.
type dropAfterCommit struct {
	grpc.ServerStream
	drop func() bool
	cut  func()
}

func (s *dropAfterCommit) SendMsg(m any) error {
	if _, ok := m.(*floev1.ProduceStreamResponse); ok && s.drop() {
		s.cut()
		<-s.Context().Done()
		return s.Context().Err()
	}
	return s.ServerStream.SendMsg(m)
}

// startCutAgent runs an agent behind a proxy whose connections are cut
// in place of the first produce answer, and returns a client through it.
func startCutAgent(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := objectstore.NewMemory()
	bcfg := batcher.DefaultConfig()
	bcfg.Linger = 2 * time.Millisecond
	var ag *agent.Agent
	b, err := batcher.New(bcfg, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
	if err != nil {
		t.Fatal(err)
	}
	if ag, err = agent.New(agent.DefaultConfig(), meta, store, b, agent.Options{}); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, lis.Addr().String())
	var once sync.Once
	drop := func() (first bool) { once.Do(func() { first = true }); return first }
	gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, &dropAfterCommit{ServerStream: ss, drop: drop, cut: proxy.cut})
	}))
	ag.Register(gs)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = gs.Serve(lis) }()
	go func() { defer wg.Done(); _ = ag.Run(ctx) }()
	c, err := client.Dial(proxy.lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		gs.Stop()
		_ = b.Close(context.Background())
		cancel()
		wg.Wait()
		meta.Close()
	})
	return c
}

// TestPlainProduceLostAnswer: the connection drops after the agent
// committed a plain producer's request and before its answer. The
// producer reports an unknown outcome (OutcomeUnknown, not NotCommitted)
// instead of retrying into a duplicate; with AtLeastOnce it retries and
// the record is stored twice, as that option says.
func TestPlainProduceLostAnswer(t *testing.T) {
	for _, atLeastOnce := range []bool{false, true} {
		c := startCutAgent(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if _, err := c.CreateTopic(ctx, "t", 1, nil); err != nil {
			t.Fatal(err)
		}
		p, err := c.NewProducer(ctx, "t", client.ProducerOptions{AtLeastOnce: atLeastOnce, MinBackoff: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		err = p.Send(0, []*floev1.Record{client.Value(nil, []byte("once"))}, nil)
		if err == nil {
			err = p.Flush()
		}
		p.Close()
		var hw int64
		for hw == 0 && ctx.Err() == nil { // the client reconnects
			if off, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: "t",
				Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST}); err == nil {
				hw = off.GetOffsets()[0].GetOffset()
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		switch {
		case !atLeastOnce && (!client.OutcomeUnknown(err) || client.NotCommitted(err) || hw != 1):
			t.Errorf("plain producer: err %v (outcome unknown %v), high watermark %d; want an unknown outcome and one copy",
				err, client.OutcomeUnknown(err), hw)
		case atLeastOnce && (err != nil || hw != 2):
			t.Errorf("at least once: err %v, high watermark %d; want the retry's second copy", err, hw)
		}
	}
}

func TestOutcomeHelpers(t *testing.T) {
	transport := status.Error(codes.Unavailable, "connection reset")
	for _, tc := range []struct {
		err                  error
		notCommitted, unsure bool
	}{
		{transport, false, true},
		{status.Error(codes.Unknown, "outcome unknown"), false, true},
		{status.Error(codes.DeadlineExceeded, "deadline"), false, true},
		{status.Error(codes.ResourceExhausted, "backpressure"), true, false},
		{status.Error(codes.InvalidArgument, "bad"), false, false},
		{errors.Join(client.ErrOutcomeUnknown, io.EOF), false, true},
		{nil, false, false},
	} {
		if client.NotCommitted(tc.err) != tc.notCommitted || client.OutcomeUnknown(tc.err) != tc.unsure {
			t.Errorf("%v: not committed %v, unknown %v", tc.err, client.NotCommitted(tc.err), client.OutcomeUnknown(tc.err))
		}
	}
}

// oneMessageLog answers a subscription with one message, then nothing.
type oneMessageLog struct {
	floev1.UnimplementedLogServiceServer
}

func (oneMessageLog) Subscribe(_ *floev1.SubscribeRequest, s floev1.LogService_SubscribeServer) error {
	if err := s.Send(&floev1.SubscribeResponse{Records: []*floev1.Record{{Offset: 0}}}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// TestKeepaliveNoticesHalfOpenConnection: once the connection under an
// open stream silently stops carrying anything (the agent's host gone
// without a FIN), the client's keepalive pings go unanswered and the
// stream fails with Unavailable within KeepaliveTime + KeepaliveTimeout,
// instead of waiting for TCP's own timeouts (minutes).
func TestKeepaliveNoticesHalfOpenConnection(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	floev1.RegisterLogServiceServer(gs, oneMessageLog{})
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	proxy := newCutProxy(t, lis.Addr().String())
	c, err := client.Dial(proxy.lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*(client.KeepaliveTime+client.KeepaliveTimeout))
	defer cancel()
	s, err := c.Log.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	proxy.frozen.Store(true)
	_, err = s.Recv()
	if status.Code(err) != codes.Unavailable || ctx.Err() != nil {
		t.Fatalf("stream over a half-open connection: %v (deadline: %v), want Unavailable from the keepalive", err, ctx.Err())
	}
}
