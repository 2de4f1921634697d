package kafka_test

import (
	"context"
	"sync"
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

// countingExpirer answers full passes (limit rows) a few times, then
// empty ones, and counts the calls.
type countingExpirer struct {
	mu    sync.Mutex // protects calls, full
	calls int
	full  int // answers of limit rows left
}

func (e *countingExpirer) KafkaExpireProducerEpochs(_ context.Context, after time.Duration, limit int) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.full > 0 {
		e.full--
		return limit, nil
	}
	return 0, nil
}

// TestExpireProducerIDsOnItsOwn: the passes run without a Kafka server
// (an agent with no Kafka listener), each pass goes on while a statement
// removes a full limit of rows (at most ten statements), and the loop
// returns when its context ends; an expiration of 0 runs none.
func TestExpireProducerIDsOnItsOwn(t *testing.T) {
	e := &countingExpirer{full: 12}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		kafka.ExpireProducerIDs(ctx, e, time.Second, nil)
	}()
	waitFor(t, "two expiry passes", func() bool {
		time.Sleep(50 * time.Millisecond)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.calls >= 12
	})
	cancel()
	<-done
	e.mu.Lock()
	// Pass one: ten full statements (the bound); pass two: two full ones
	// and an empty one.
	if e.calls != 13 && e.calls != 14 {
		t.Fatalf("%d statements, want 13 over two passes (14 if a third had begun)", e.calls)
	}
	e.mu.Unlock()

	off := &countingExpirer{}
	octx, ocancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer ocancel()
	kafka.ExpireProducerIDs(octx, off, 0, nil) // returns at once
	if off.calls != 0 {
		t.Fatalf("expiration 0 ran %d statements", off.calls)
	}
}
