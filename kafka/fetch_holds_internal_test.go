package kafka

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/metadata"
)

// heldBackend serves one topic "h" of two partitions whose reads are held
// segments, counting the holds not yet released.
type heldBackend struct {
	nopBackend
	batch []byte
	out   atomic.Int64 // holds not released
	reads atomic.Int64
}

func (b *heldBackend) KafkaLimits() agent.KafkaLimits {
	return agent.KafkaLimits{MaxFetchBytes: 1 << 20, MaxRequestBytes: 1 << 20, MaxWaitMs: 500, PollIntervalMs: 20}
}

func (b *heldBackend) KafkaTopic(context.Context, string) (metadata.Topic, error) {
	return metadata.Topic{ID: 1, Name: "h", Partitions: 2}, nil
}

func (b *heldBackend) KafkaBeatAgent(_ context.Context, a metadata.AgentInfo, _ time.Duration) ([]metadata.AgentInfo, error) {
	return []metadata.AgentInfo{a}, nil
}

func (b *heldBackend) KafkaLeaveAgent(context.Context, string) error { return nil }

func (b *heldBackend) KafkaWake(tps []metadata.TopicPartition) []<-chan struct{} {
	return make([]<-chan struct{}, len(tps)) // never closed: the poll interval wakes
}

func (b *heldBackend) KafkaReadHeld(_ context.Context, _ int64, p int32, offset int64, _ int) (agent.KafkaHeld, error) {
	b.reads.Add(1)
	if p == 1 || offset > 0 {
		return agent.KafkaHeld{HighWatermark: 1}, nil // nothing to read
	}
	b.out.Add(1)
	var once sync.Once
	h := agent.NewKafkaHeld([][]byte{b.batch[:100], b.batch[100:]}, func() { once.Do(func() { b.out.Add(-1) }) })
	h.HighWatermark = 1
	return h, nil
}

// TestFetchHoldsReleased: a fetch answer's held reads are released once
// written, and those of the passes of a long poll before the last at
// once; the bytes the client reads are the segments.
func TestFetchHoldsReleased(t *testing.T) {
	be := &heldBackend{batch: bytes.Repeat([]byte{7}, 9000)}
	s, err := New(DefaultConfig(), be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, lis) }()
	defer func() { cancel(); <-done }()
	cl, err := kgo.NewClient(kgo.SeedBrokers(lis.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, minBytes := range []int32{1, 1 << 20} { // 1 MiB: a long poll of several passes
		req := kmsg.NewPtrFetchRequest()
		req.MinBytes, req.MaxWaitMillis, req.MaxBytes = minBytes, 200, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "h"
		for p := range int32(2) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		before := be.reads.Load()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].Partitions[0].RecordBatches; !bytes.Equal(got, be.batch) {
			t.Fatalf("min bytes %d: %d bytes read, want the %d held", minBytes, len(got), len(be.batch))
		}
		if minBytes > 1 && be.reads.Load()-before < 4 {
			t.Fatalf("the long poll read %d times: not several passes", be.reads.Load()-before)
		}
		// Released once written: the client may read the answer just
		// before the writer releases it.
		for deadline := time.Now().Add(10 * time.Second); be.out.Load() != 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n := be.out.Load(); n != 0 {
			t.Fatalf("min bytes %d: %d holds not released", minBytes, n)
		}
		if s.BufferedBytes() != 0 {
			t.Fatalf("%d bytes still counted as buffered", s.BufferedBytes())
		}
	}
}

// TestMetricsExported: the server's gauges read its state when gathered.
func TestMetricsExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(DefaultConfig(), nopBackend{}, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	s.held.Add(1234)
	plan, _ := s.sessions.begin(sessionRequest{epoch: 0, parts: []sessionPart{reqPart("a", 0, 0), reqPart("a", 1, 0)}}, time.Now())
	s.sessions.finish(plan, []partOutcome{seen(0), seen(0)}, time.Now())
	for name, want := range map[string]float64{"floe_kafka_buffered_bytes": 1234, "floe_kafka_fetch_sessions": 1, "floe_kafka_fetch_session_partitions": 2} {
		if got := gaugeValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if _, err := New(DefaultConfig(), nopBackend{}, Options{Registry: reg}); err == nil {
		t.Fatal("a second server registered the same metrics")
	}
}

// gaugeValue is the value of reg's gauge name.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not exported", name)
	return 0
}
