package main_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// An agent without a Kafka listener still forgets idle producer ids: a
// gRPC producer's stale epoch, fenced right after two bumps, is bumped
// again once kafka.producer_id_expiration has passed (before, only an
// agent with a Kafka listener ran the expiry passes, so producer_epochs
// grew without bound where no agent spoke Kafka).
func TestProducerIDsExpireWithoutKafkaListener(t *testing.T) {
	dev := startFloe(t, "dev", "-data", t.TempDir(), "-kafka-listen", "", "-kafka-producer-id-expiration", "1s")
	c := dialT(t, dev.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := c.Log.InitProducer(ctx, &floev1.InitProducerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetProducerId()
	init := func(epoch int32) (*floev1.InitProducerResponse, error) {
		return c.Log.InitProducer(ctx, &floev1.InitProducerRequest{ProducerId: &id, ProducerEpoch: &epoch})
	}
	for e := range int32(2) {
		if r, err := init(e); err != nil || r.GetProducerEpoch() != e+1 {
			t.Fatalf("bump of epoch %d: %v, %v", e, r, err)
		}
	}
	if _, err := init(0); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("stale epoch before the expiry: %v, want FailedPrecondition (fenced)", err)
	}
	for {
		time.Sleep(200 * time.Millisecond)
		r, err := init(0)
		if status.Code(err) == codes.FailedPrecondition {
			if ctx.Err() != nil {
				t.Fatal("the producer id never expired on an agent without a Kafka listener")
			}
			continue
		}
		if err != nil || r.GetProducerId() != id || r.GetProducerEpoch() != 1 {
			t.Fatalf("the expired id's old epoch: %v, %v; want %d at epoch 1", r, err, id)
		}
		return
	}
}
