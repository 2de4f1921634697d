package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/kafka"
)

// TestKafkaProducerIDExpiration: with kafka.producer_id_expiration 1 s,
// a bumped producer id's state is forgotten by the agent's expiry pass:
// its stale epoch, fenced (PRODUCER_FENCED) right after the bump, is
// bumped again once the id has expired, as Apache Kafka forgets
// producers after producer.id.expiration.ms.
func TestKafkaProducerIDExpiration(t *testing.T) {
	b := startBroker(t, func(c *kafka.Config) { c.ProducerIDExpiration = time.Second })
	cl := newClient(t, b)
	init := func(id int64, epoch int16) *kmsg.InitProducerIDResponse {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.ProducerID, req.ProducerEpoch = 4, id, epoch
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r := init(-1, -1)
	if r.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	id := r.ProducerID
	if r := init(id, 0); r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("bump: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	if r := init(id, 1); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("second bump: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	if r := init(id, 0); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("stale epoch before expiry: %v, want PRODUCER_FENCED", kerr.ErrorForCode(r.ErrorCode))
	}
	// A fenced InitProducerId changes nothing: polling it does not keep
	// the id alive.
	waitFor(t, "the producer id to expire", func() bool {
		time.Sleep(100 * time.Millisecond)
		r := init(id, 0)
		switch r.ErrorCode {
		case kerr.ProducerFenced.Code:
			return false
		case 0:
			if r.ProducerEpoch != 1 || r.ProducerID != id {
				t.Fatalf("the expired id's old epoch: %+v, want %d at epoch 1", r, id)
			}
			return true
		}
		t.Fatalf("the expired id's old epoch: %v", kerr.ErrorForCode(r.ErrorCode))
		return false
	})
}
