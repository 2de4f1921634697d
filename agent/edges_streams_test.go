package agent_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
)

// eventually polls cond every 10 ms until it holds or 20 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Subscriptions whose clients never read cannot pin more than the agent's
// stream budget: with room for three, ten never-read subscriptions of a
// topic with data get three accepted (each holding its 1 MiB buffer) and
// seven refused with ResourceExhausted naming stream_buffer_bytes; once
// one leaves, a new one is accepted. Before, every subscription was
// accepted and held its own buffer: 30 of them held 1 GB.
func TestNeverReadSubscriptionsWithinStreamBudget(t *testing.T) {
	const buf = 1 << 20
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxFetchBytes, a.SubscribeBufferBytes = buf, buf
		a.MaxRequestBytes, a.MaxRecordBytes = buf, 256<<10
		a.StreamBufferBytes = 3 * buf
	}})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	p := int32(0)
	for range 16 { // 4 MiB
		if _, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: make([]byte, 256<<10)}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A small stream window (no BDP growth): a stream not read blocks
	// the agent's send after 64 KiB.
	conn := s.dial(t, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<20))
	lc := floev1.NewLogServiceClient(conn)
	subscribe := func() (floev1.LogService_SubscribeClient, context.CancelFunc, error) {
		sctx, cancel := context.WithCancel(ctx)
		st, err := lc.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "t", MaxBytes: buf,
			Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}})
		if err != nil {
			cancel()
			return nil, nil, err
		}
		md, err := st.Header() // headers come with the first message
		if err == nil && md == nil {
			_, err = st.Recv() // ended without headers: its status
		}
		if err != nil {
			cancel()
			return nil, nil, err
		}
		return st, cancel, nil
	}
	var open []context.CancelFunc
	refused := 0
	for range 10 {
		_, cancel, err := subscribe()
		if err != nil {
			wantStatus(t, "subscription past the budget", err, codes.ResourceExhausted, agent.ReasonLimit, "stream_buffer_bytes")
			refused++
			continue
		}
		open = append(open, cancel)
		n := int64(len(open)) * buf
		eventually(t, "the never-read subscriptions hold their buffers", func() bool { return agent.StreamBufferHeld(s.ag) >= n })
	}
	if len(open) != 3 || refused != 7 {
		t.Fatalf("%d subscriptions accepted, %d refused; want 3 and 7", len(open), refused)
	}
	if held := agent.StreamBufferHeld(s.ag); held > 3*buf {
		t.Fatalf("%d bytes held, over the budget", held)
	}
	open[0]()
	eventually(t, "a subscription that left gives its buffer back", func() bool { return agent.StreamBufferHeld(s.ag) <= 2*buf })
	_, cancel, err := subscribe()
	if err != nil {
		t.Fatalf("a subscription after one left: %v", err)
	}
	cancel()
	for _, c := range open[1:] {
		c()
	}
}
