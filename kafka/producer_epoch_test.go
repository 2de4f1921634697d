package kafka_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// initProducer sends InitProducerId for (id, epoch).
func initProducer(t *testing.T, cl *kgo.Client, id int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 60000, id, epoch
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("InitProducerId(%d, %d): %v", id, epoch, err)
	}
	return resp
}

// TestInitProducerIdBump: InitProducerId with a producer's id and epoch
// (KIP-360) bumps the epoch of that id; a retried bump gets the same
// answer; the new epoch restarts sequences at 0 and fences the old one in
// produce; a stale epoch is PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
// v4); half a pair is INVALID_REQUEST.
func TestInitProducerIdBump(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "bump", 1)
	ir := initProducer(t, cl, -1, -1)
	if ir.ErrorCode != 0 || ir.ProducerID <= 0 || ir.ProducerEpoch != 0 {
		t.Fatalf("new producer: %+v", ir)
	}
	id := ir.ProducerID
	if r := produceRaw(t, cl, "bump", 0, encodeBatch(t, 3, id, 0, 0, 1700000000000)); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("epoch 0: %+v", r)
	}
	for _, what := range []string{"bump", "retried bump"} {
		if ir := initProducer(t, cl, id, 0); ir.ErrorCode != 0 || ir.ProducerID != id || ir.ProducerEpoch != 1 {
			t.Fatalf("%s of (%d, 0): %+v, want (%d, 1)", what, id, ir, id)
		}
	}
	if r := produceRaw(t, cl, "bump", 0, encodeBatch(t, 2, id, 1, 0, 1700000000010)); r.ErrorCode != 0 || r.BaseOffset != 3 {
		t.Fatalf("epoch 1 from sequence 0: %+v", r)
	}
	if r := produceRaw(t, cl, "bump", 0, encodeBatch(t, 1, id, 0, 3, 1700000000020)); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("epoch 0 after epoch 1: error %d, want INVALID_PRODUCER_EPOCH", r.ErrorCode)
	}
	if ir := initProducer(t, cl, id, 1); ir.ErrorCode != 0 || ir.ProducerID != id || ir.ProducerEpoch != 2 {
		t.Fatalf("bump of (%d, 1): %+v", id, ir)
	}
	if ir := initProducer(t, cl, id, 0); ir.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("stale epoch: error %d, want PRODUCER_FENCED", ir.ErrorCode)
	}
	if ir := initProducer(t, cl, id, -1); ir.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("id without epoch: error %d, want INVALID_REQUEST", ir.ErrorCode)
	}
	if ir := initProducer(t, cl, id, 32766); ir.ErrorCode != 0 || ir.ProducerID == id || ir.ProducerEpoch != 0 {
		t.Fatalf("exhausted epoch: %+v, want a new id with epoch 0", ir)
	}

	v3 := kversion.Stable()
	v3.SetMaxKeyVersion(kmsg.InitProducerID.Int16(), 3)
	old := newClient(t, b, kgo.MaxVersions(v3))
	if ir := initProducer(t, old, id, 0); ir.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch at v3: error %d, want INVALID_PRODUCER_EPOCH", ir.ErrorCode)
	}
}

// TestKgoEpochBump: a franz-go idempotent producer whose batch is refused
// with OUT_OF_ORDER_SEQUENCE_NUMBER bumps its epoch (locally, KIP-360),
// restarts its sequences at 0 and its records are stored; its old epoch
// is fenced after.
func TestKgoEpochBump(t *testing.T) {
	b := startBroker(t, nil)
	p := newClient(t, b, kgo.ProducerLinger(0))
	createTopic(t, p, "kbump", 1)
	ctx := context.Background()
	rec := func(v string) *kgo.Record { return &kgo.Record{Topic: "kbump", Value: []byte(v)} }
	if err := p.ProduceSync(ctx, rec("a"), rec("b")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id, epoch, err := p.ProducerID(ctx)
	if err != nil || epoch != 0 {
		t.Fatalf("ProducerID = %d, %d, %v", id, epoch, err)
	}
	// Another writer takes the producer's next sequence: its next batch
	// is out of order.
	if r := produceRaw(t, p, "kbump", 0, encodeBatch(t, 1, id, 0, 2, 1700000000000)); r.ErrorCode != 0 {
		t.Fatalf("injected batch: %+v", r)
	}
	if err := p.ProduceSync(ctx, rec("c"), rec("d")).FirstErr(); err != nil {
		t.Fatalf("after OUT_OF_ORDER_SEQUENCE_NUMBER: %v", err)
	}
	id2, epoch2, err := p.ProducerID(ctx)
	if err != nil || id2 != id || epoch2 != 1 {
		t.Fatalf("ProducerID after the error = %d, %d, %v; want %d, 1", id2, epoch2, err, id)
	}
	if r := produceRaw(t, p, "kbump", 0, encodeBatch(t, 1, id, 0, 3, 1700000000000)); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch after the bump: error %d, want INVALID_PRODUCER_EPOCH", r.ErrorCode)
	}
	c := newClient(t, b, kgo.ConsumeTopics("kbump"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for _, r := range consumeN(t, c, 5) {
		got = append(got, string(r.Value))
	}
	if want := []string{"a", "b", "", "c", "d"}; len(got) != 5 || got[0] != "a" || got[1] != "b" || got[3] != "c" || got[4] != "d" {
		t.Fatalf("records %q, want %q (the third is the injected one)", got, want)
	}
}
