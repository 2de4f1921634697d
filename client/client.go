// Package client is the Go client of floe's gRPC API, used by the CLI and
// the tests.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/grpcwire"
)

// MaxMessageBytes is the largest answer the client accepts.
const MaxMessageBytes = 64 << 20

// The connection's receive side, for answers of MiBs (a catch-up read):
// gRPC's defaults (a 32 KiB read buffer, 64 KiB windows grown by its BDP
// estimate, which stays small on a fast link) made the client read 32 KiB
// per syscall and answer every few frames with a WINDOW_UPDATE.
const (
	// ReadBufferBytes is what one read from the socket takes at most:
	// a quarter of gRPC's read syscalls, still small enough that the
	// frames copied out of it come from the core's cache (1 MiB made that
	// copy slower than the syscalls it saved).
	ReadBufferBytes = 128 << 10
	// StreamWindowBytes is a stream's flow-control window: what the agent
	// may send a stream ahead of the client's reading, so about one
	// subscribe answer. Setting it turns gRPC's BDP window growth off.
	StreamWindowBytes = 4 << 20
	// ConnWindowBytes is the connection's window, shared by its streams:
	// it bounds what a connection holds unread.
	ConnWindowBytes = 16 << 20
)

// KeepaliveTime is how long a connection with streams open may be silent
// before the client pings, and KeepaliveTimeout how long it then waits for
// the answer before it drops the connection (its streams fail with
// Unavailable and reconnect). The agent permits pings this often.
const (
	KeepaliveTime    = 10 * time.Second
	KeepaliveTimeout = 5 * time.Second
)

// Client talks to one floe agent.
type Client struct {
	addr   string
	dial   []grpc.DialOption // as given to Dial: the agents a Router dials get them too
	conn   *grpc.ClientConn
	Topics floev1.TopicServiceClient
	Log    floev1.LogServiceClient
}

// Dial connects to addr (host:port). Without WithTLS the connection is
// plaintext. The connection is made lazily: the first call reports an
// unreachable agent.
func Dial(addr string, opts ...grpc.DialOption) (*Client, error) {
	if addr == "" {
		return nil, errors.New("client: empty agent address")
	}
	// Fetches and subscriptions answer up to the agent's fetch limit plus
	// one record; accept that much (gRPC's default is 4 MiB).
	// Keepalive pings notice a half-open connection (an agent gone without
	// a FIN) within KeepaliveTime+KeepaliveTimeout; an option given
	// overrides it.
	// The codec (grpcwire) decodes the batches of fetch and subscribe
	// answers in place: they reference the received buffer, not a copy;
	// receive buffers are not zeroed before gRPC fills them.
	given := append([]grpc.DialOption(nil), opts...)
	pool := grpcwire.NewPool()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), // WithTLS, later, replaces it
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.ForceCodecV2(grpcwire.NewCodec(pool))),
		experimental.WithBufferPool(pool),
		grpc.WithReadBufferSize(ReadBufferBytes),
		grpc.WithInitialWindowSize(StreamWindowBytes), grpc.WithInitialConnWindowSize(ConnWindowBytes),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout})}, opts...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	return &Client{addr: addr, dial: given, conn: conn, Topics: floev1.NewTopicServiceClient(conn), Log: floev1.NewLogServiceClient(conn)}, nil
}

// Addr is the address the client was dialed with.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// CreateTopic creates a topic.
func (c *Client) CreateTopic(ctx context.Context, name string, partitions int32, config map[string]string) (*floev1.Topic, error) {
	resp, err := c.Topics.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: name, Partitions: partitions, Config: config})
	if err != nil {
		return nil, err
	}
	return resp.GetTopic(), nil
}

// ListTopics returns every topic, in name order, following the agent's
// pages (at most maxPages of them: a bound against an agent that never
// ends; 0 means 10,000).
func (c *Client) ListTopics(ctx context.Context, maxPages int) ([]*floev1.Topic, error) {
	if maxPages <= 0 {
		maxPages = 10000
	}
	var out []*floev1.Topic
	token := ""
	for range maxPages {
		resp, err := c.Topics.ListTopics(ctx, &floev1.ListTopicsRequest{PageToken: token})
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetTopics()...)
		if token = resp.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("client: list topics: more than %d pages", maxPages)
}

// Produce sends records to one partition (partition >= 0) or by key
// (partition < 0) and returns each record's offset.
func (c *Client) Produce(ctx context.Context, topic string, partition int32, records ...*floev1.Record) (*floev1.ProduceResponse, error) {
	req := &floev1.ProduceRequest{Topic: topic, Records: records}
	if partition >= 0 {
		req.Partition = &partition
	}
	return c.Log.Produce(ctx, req)
}

// Fetch reads records of one partition from offset.
func (c *Client) Fetch(ctx context.Context, topic string, partition int32, offset int64, maxBytes, maxWaitMs int32) (*floev1.FetchResponse, error) {
	return c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxBytes: maxBytes, MaxWaitMs: maxWaitMs})
}

// Subscribe streams records to fn until fn returns an error (returned,
// except ErrStop which ends the subscription cleanly) or ctx ends.
func (c *Client) Subscribe(ctx context.Context, req *floev1.SubscribeRequest, fn func(*floev1.SubscribeResponse) error) error {
	return c.subscribe(ctx, req, false, fn)
}

// SubscribeLent is Subscribe for a reader done with each answer when fn
// returns (a batches reader that walks them, WalkBatches): the answer and
// everything it references (its batches; in batches mode the keys and
// values a walk hands over) are valid only until fn returns, because the
// receive buffer the batches point into is then reused for a later answer.
// fn must copy what it keeps. It saves a fresh buffer per answer
// (grpcwire.Lent).
func (c *Client) SubscribeLent(ctx context.Context, req *floev1.SubscribeRequest, fn func(*floev1.SubscribeResponse) error) error {
	return c.subscribe(ctx, req, true, fn)
}

func (c *Client) subscribe(ctx context.Context, req *floev1.SubscribeRequest, lend bool, fn func(*floev1.SubscribeResponse) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Log.Subscribe(ctx, req)
	if err != nil {
		return err
	}
	var lent *grpcwire.Lent
	if lend {
		lent = grpcwire.NewLent()
		defer lent.Release()
	}
	for {
		var resp *floev1.SubscribeResponse
		if lent != nil {
			lent.Release()
			lent.Resp = new(floev1.SubscribeResponse) // fn may keep the message, not what it references
			err = stream.RecvMsg(lent)
			resp = lent.Resp
		} else {
			resp, err = stream.Recv()
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(resp); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// ErrStop ends a Subscribe without error.
var ErrStop = errors.New("client: stop subscription")

// Value makes a record with a value and an optional key (nil = null key).
func Value(key, value []byte) *floev1.Record {
	return &floev1.Record{Key: key, Value: value}
}

// FetchBatches fetches in batches mode (FetchRequest.batches) and decodes
// the answer: records of partition from offset on.
func (c *Client) FetchBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes, maxWaitMs int32) (*floev1.FetchResponse, []*floev1.Record, error) {
	resp, err := c.Log.Fetch(ctx, &floev1.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxBytes: maxBytes, MaxWaitMs: maxWaitMs, Batches: true})
	if err != nil {
		return nil, nil, err
	}
	recs, err := DecodeBatches(resp.GetBatches(), partition, offset, 0)
	if err != nil {
		return nil, nil, err
	}
	return resp, recs, nil
}
