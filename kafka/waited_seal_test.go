package kafka_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// A Kafka client that waits on the agent's open file (its one produce
// request in flight) adds nothing to it until it is sealed. Each request
// is answered once the file is two fifths of its linger old, well before the
// linger ends, because the batcher seals the file its connection waits on
// (batcher.Config.SealWhenWaited: the file holds more than an eighth of a
// full one, and is two fifths of the linger old); with the setting off this test
// waits out the linger and fails.
func TestProduceNotHeldForLingerWhenClientWaits(t *testing.T) {
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	o := agenttest.Default()
	o.Batcher.Linger = 4 * time.Second
	o.Batcher.MaxFileBytes = 512 << 10
	o.Batcher.SealWhenWaited = true
	o.Agent.PollInterval = 200 * time.Millisecond
	b := startBrokerAgent(t, meta, objectstore.NewMemory(), o, nil, kafka.Options{}, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "waited", 2)

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	val := make([]byte, 1024)
	for round := range 3 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "waited"
		for p := range int32(2) {
			recs := make([]kbatch.Record, 40) // 2 × 40 KiB: more than 64 KiB
			for i := range recs {
				recs[i] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(fmt.Sprint(round, i)), Value: val}
			}
			batch, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
			if err != nil {
				t.Fatal(err)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("round %d: produce: %v", round, err)
		}
		switch took := time.Since(start); {
		case took < o.Batcher.Linger*2/5:
			t.Fatalf("round %d: answered after %v: sealed before two fifths of the linger (%v)", round, took, o.Batcher.Linger)
		case took >= o.Batcher.Linger*7/8:
			t.Fatalf("round %d: answered after %v: held for the linger (%v)", round, took, o.Batcher.Linger)
		}
		for _, sp := range resp.Topics[0].Partitions {
			if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
				t.Fatalf("round %d, partition %d: %v", round, sp.Partition, err)
			}
			if want := int64(round * 40); sp.BaseOffset != want {
				t.Fatalf("round %d, partition %d: base offset %d, want %d", round, sp.Partition, sp.BaseOffset, want)
			}
		}
	}
}
