package agent_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
)

// blockedInOwnBuffer reports whether a goroutine of this process waits
// for room in a subscription's own buffer (SubscribeBufferBytes).
func blockedInOwnBuffer() bool {
	buf := make([]byte, 1<<22)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "agent.(*subBuffer).Acquire")
}

// TestSubscriptionBufferIsBounded: one subscription that its client never
// reads holds at most its own buffer (SubscribeBufferBytes) of the
// agent's stream budget, however many partitions it reads and however
// much room the budget has: its eight partition readers, each taking a
// read of max_bytes, stop at four reads' worth and wait for room in the
// buffer. With the buffer unbounded, they would take the budget.
func TestSubscriptionBufferIsBounded(t *testing.T) {
	const read, own, parts = 256 << 10, 1 << 20, 8 // four reads fit the buffer
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxFetchBytes, a.SubscribeBufferBytes = read, own
		a.MaxRequestBytes, a.MaxRecordBytes = own, 256<<10
		a.StreamBufferBytes = 16 * own
	}})
	s.createTopic(t, "t", parts)
	ctx := context.Background()
	for p := range int32(parts) {
		for range 2 {
			if _, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: make([]byte, 100<<10)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A small stream window: the agent's first send blocks, nothing read.
	conn := s.dial(t, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<20))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := floev1.NewLogServiceClient(conn).Subscribe(sctx, &floev1.SubscribeRequest{Topic: "t", MaxBytes: read,
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}); err != nil {
		t.Fatal(err)
	}
	// Either the buffer is full (four reads held, one in the blocked
	// send, three handed to it) and a reader waits for room in it
	// (bounded), or they took more than it holds (not).
	eventually(t, "the subscription's buffer fills and a reader waits for room in it", func() bool {
		held := agent.StreamBufferHeld(s.ag)
		return held > own || held == own && blockedInOwnBuffer()
	})
	if held := agent.StreamBufferHeld(s.ag); held > own {
		t.Fatalf("one never-read subscription holds %d bytes of the stream budget, over its own buffer of %d", held, own)
	}
}
