package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// busySeq is fakeSeq whose unary Produce (the producer's one-at-a-time
// retries) refuses every request with ResourceExhausted: nothing
// committed by that attempt.
type busySeq struct{ *fakeSeq }

func (busySeq) Produce(context.Context, *floev1.ProduceRequest) (*floev1.ProduceResponse, error) {
	return nil, status.Error(codes.ResourceExhausted, "busy")
}

// TestProducerEarlierUnknownOutcomeStaysUnknown: an idempotent
// producer's request is stored, its stream lost before the answer
// (outcome unknown), and each retry refused with an error that says that
// attempt committed nothing. The request may be stored (it is), so the
// producer reports its outcome unknown — the error OutcomeUnknown, not
// NotCommitted, and Settle lists it as unknown — never as definitely
// failed. (The campaign's seed 2295 read a value whose send was reported
// failed: its first attempt had committed before the agent was killed,
// the retries met PostgreSQL cut off.)
func TestProducerEarlierUnknownOutcomeStaysUnknown(t *testing.T) {
	f := &fakeSeq{window: 1, drop: map[int]bool{0: true},
		log: map[int32][]string{}, next: map[int32]int32{}, recent: map[int32][][2]int64{}}
	c := startFakeServer(t, busySeq{f})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := c.NewProducer(ctx, "t", client.ProducerOptions{Idempotent: true, MaxInFlight: 1, Retries: 2,
		MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.Send(0, []*floev1.Record{client.Value(nil, []byte("v"))}, "tag")
	if err == nil {
		err = p.Flush()
	}
	var be *client.BatchError
	if !errors.As(err, &be) || client.NotCommitted(be.Err) || !client.OutcomeUnknown(be.Err) {
		t.Fatalf("flush: %v (not committed %v, outcome unknown %v); want an unknown outcome", err,
			client.NotCommitted(err), client.OutcomeUnknown(err))
	}
	failed, unknown := p.Settle()
	if len(failed) != 0 || len(unknown) != 1 || unknown[0] != "tag" {
		t.Fatalf("settle: failed %v, unknown %v; want the request unknown", failed, unknown)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.log[0]) != 1 {
		t.Fatalf("stored %v, want the first attempt's record", f.log[0])
	}
}
