package agent_test

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// reasonOf is the ErrorInfo reason of a status error ("" without one).
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			return i.GetReason()
		}
	}
	return ""
}

// TestInitProducerBumpsEpoch: gRPC InitProducer with a producer id and
// epoch follows the rule Kafka's InitProducerId does (DecideProducerInit):
// client.Producer.BumpEpoch gets the next epoch and restarts its
// sequences at 0; a retried bump gets the same answer; an older epoch is
// FailedPrecondition PRODUCER_FENCED, for InitProducer and for a batch
// of it in a partition the new epoch wrote; half a pair is
// InvalidArgument.
func TestInitProducerBumpsEpoch(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "bump", 1, nil); err != nil {
		t.Fatal(err)
	}
	p, err := h.c.NewProducer(ctx, "bump", client.ProducerOptions{Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(v string) {
		t.Helper()
		if err := p.Send(0, []*floev1.Record{{Value: []byte(v)}}, v); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	send("a")
	send("b")
	id, epoch := p.ProducerID()
	if id <= 0 || epoch != 0 {
		t.Fatalf("producer %d epoch %d, want a new id at epoch 0", id, epoch)
	}
	if err := p.BumpEpoch(); err != nil {
		t.Fatal(err)
	}
	if gotID, got := p.ProducerID(); gotID != id || got != 1 {
		t.Fatalf("after the bump: producer %d epoch %d, want %d epoch 1", gotID, got, id)
	}
	send("c") // sequence 0 at epoch 1: accepted
	if err := p.BumpEpoch(); err != nil {
		t.Fatal(err)
	}
	send("d")

	init := func(id int64, epoch int32) (*floev1.InitProducerResponse, error) {
		return h.c.Log.InitProducer(ctx, &floev1.InitProducerRequest{ProducerId: &id, ProducerEpoch: &epoch})
	}
	if r, err := init(id, 1); err != nil || r.GetProducerId() != id || r.GetProducerEpoch() != 2 {
		t.Fatalf("retried bump of epoch 1: %v, %v; want %d epoch 2", r, err, id)
	}
	_, err = init(id, 0)
	if status.Code(err) != codes.FailedPrecondition || reasonOf(err) != agent.ReasonProducerFenced {
		t.Fatalf("bump of the stale epoch 0: %v, want FailedPrecondition %s", err, agent.ReasonProducerFenced)
	}
	zero, seq := int32(0), int32(2)
	_, err = h.c.Log.Produce(ctx, &floev1.ProduceRequest{Topic: "bump", Partition: &zero, ProducerId: &id, ProducerEpoch: 0, BaseSequence: seq,
		Records: []*floev1.Record{{Value: []byte("stale")}}})
	if status.Code(err) != codes.FailedPrecondition || reasonOf(err) != agent.ReasonProducerFenced {
		t.Fatalf("a batch of the stale epoch 0: %v, want FailedPrecondition %s", err, agent.ReasonProducerFenced)
	}
	epoch = 1
	if _, err := h.c.Log.InitProducer(ctx, &floev1.InitProducerRequest{ProducerEpoch: &epoch}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an epoch without an id: %v, want InvalidArgument", err)
	}
	recs, err := h.c.Fetch(ctx, "bump", 0, 0, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs.GetRecords() {
		got = append(got, string(r.GetValue()))
	}
	if len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "d" {
		t.Fatalf("log %q, want [a b c d]", got)
	}
}
