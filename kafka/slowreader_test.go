package kafka_test

import (
	"bufio"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/kafka"
)

// TestSlowReaderBounded: a client pipelines 16 fetches of 4 MiB each and
// stops reading its socket. The agent holds at most its request budget
// plus one response (BufferedBytes), not the 16 responses; once the
// client reads again every fetch is answered, in order.
func TestSlowReaderBounded(t *testing.T) {
	const budget = 512 << 10
	b := startBroker(t, func(c *kafka.Config) {
		c.MaxFrameBytes, c.MaxBufferedBytes, c.MaxInFlight = 64<<10, budget, 16
	})
	cl := newClient(t, b, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(60<<10), kgo.BrokerMaxWriteBytes(64<<10))
	createTopic(t, cl, "slow", 1)
	var recs []*kgo.Record
	rng := rand.New(rand.NewPCG(1, 2))
	for range 128 {
		v := make([]byte, 32<<10)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		recs = append(recs, &kgo.Record{Topic: "slow", Value: v})
	}
	produceAll(t, cl, recs)

	nc, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawConn{t: t, nc: nc}
	const fetches, maxBytes = 16, 4 << 20
	for i := range fetches {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(4)
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, maxBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "slow"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, maxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		c.send(req, int32(i))
	}
	// Not reading: sample what the agent holds while its writer is stuck.
	var most int64
	for range 100 {
		most = max(most, b.srv.BufferedBytes())
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the agent held at most %d bytes", most)
	if bound := int64(budget + maxBytes + 64<<10); most > bound {
		t.Fatalf("a client that does not read made the agent hold %d bytes, bound %d", most, bound)
	}
	if most == 0 {
		t.Fatal("nothing held: the fetches were not served")
	}
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c.br = bufio.NewReader(nc)
	for i := range fetches {
		corr, _, err := c.recv()
		if err != nil || corr != int32(i) {
			t.Fatalf("answer %d: correlation %d, %v", i, corr, err)
		}
	}
}
