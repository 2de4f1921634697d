package main_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// Partition affinity (client.ProducerOptions.PartitionAffinity) against
// two agents on PostgreSQL and S3: the agents learn each other through
// the agents table (the Kafka listener's heartbeat), DescribePlacement
// names each partition's agent, and producers dialing different agents
// all send a partition to that one.

func twoAgents(t *testing.T) (a1, a2 *proc) {
	t.Helper()
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	args := []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style",
		"-s3-prefix", "affinity", "-kafka-agent-ttl", "2s"}
	return startFloe(t, args...), startFloe(t, args...)
}

// placementOf waits until c's agent names both agents and returns the
// gRPC address of each partition's preferred agent.
func placementOf(t *testing.T, c *client.Client, topic string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.Topics.DescribePlacement(context.Background(), &floev1.DescribePlacementRequest{Topic: topic})
		if err != nil {
			t.Fatalf("describe placement: %v", err)
		}
		addr := map[int32]string{}
		for _, a := range resp.GetAgents() {
			if a.GetGrpcAddress() != "" {
				addr[a.GetNodeId()] = a.GetGrpcAddress()
			}
		}
		if len(addr) == want {
			out := make([]string, len(resp.GetPartitionAgents()))
			for p, n := range resp.GetPartitionAgents() {
				out[p] = addr[n]
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("placement names %d agents with addresses (%v), want %d", len(addr), resp.GetAgents(), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func newAffinityProducer(t *testing.T, c *client.Client, topic string, affinity bool, onResult func(any, *floev1.ProduceResponse)) *client.Producer {
	t.Helper()
	p, err := c.NewProducer(context.Background(), topic, client.ProducerOptions{
		Idempotent: true, Batches: true, PartitionAffinity: affinity, OnResult: onResult,
		Router:     client.RouterOptions{Refresh: 200 * time.Millisecond, DownFor: 3 * time.Second},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestPartitionAffinityOneWriter: two producers, one dialing each agent,
// send to every partition, one partition at a time. Without affinity both
// agents write every partition; with it exactly one does, the one
// DescribePlacement names, and both agents write some partitions.
func TestPartitionAffinityOneWriter(t *testing.T) {
	a1, a2 := twoAgents(t)
	c1, c2 := dialT(t, a1.addr), dialT(t, a2.addr)
	const parts = 12
	ctx := context.Background()
	for _, affinity := range []bool{false, true} {
		topic := fmt.Sprintf("aff-%v", affinity)
		if _, err := c1.CreateTopic(ctx, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
		where := placementOf(t, c1, topic, 2)
		if w2 := placementOf(t, c2, topic, 2); fmt.Sprint(w2) != fmt.Sprint(where) {
			t.Fatalf("the agents place differently: %v and %v", where, w2)
		}
		var acks []acked
		var mu sync.Mutex
		onResult := func(tag any, r *floev1.ProduceResponse) {
			a := tag.(acked)
			a.offset = r.GetOffsets()[0]
			mu.Lock()
			acks = append(acks, a)
			mu.Unlock()
		}
		ps := []*client.Producer{newAffinityProducer(t, c1, topic, affinity, onResult), newAffinityProducer(t, c2, topic, affinity, onResult)}
		writers := map[string]int{}
		seq := 0
		for p := int32(0); p < parts; p++ {
			before := []float64{metricValue(t, a1.metrics, "floe_produced_records_total"), metricValue(t, a2.metrics, "floe_produced_records_total")}
			for range 5 {
				for i, pr := range ps {
					tag := acked{producer: i, seq: seq, partition: p}
					if err := pr.Send(p, []*floev1.Record{client.Value(nil, fmt.Appendf(nil, "p%d-%d", i, seq))}, tag); err != nil {
						t.Fatal(err)
					}
				}
				seq++
			}
			for _, pr := range ps {
				if err := pr.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			grew := []float64{metricValue(t, a1.metrics, "floe_produced_records_total") - before[0], metricValue(t, a2.metrics, "floe_produced_records_total") - before[1]}
			if grew[0]+grew[1] != 10 {
				t.Fatalf("affinity %v, partition %d: the agents acknowledged %v records, want 10 in all", affinity, p, grew)
			}
			switch {
			case !affinity && (grew[0] == 0 || grew[1] == 0):
				t.Fatalf("without affinity, partition %d: agents wrote %v records; want both", p, grew)
			case affinity && grew[0] != 0 && grew[1] != 0:
				t.Fatalf("with affinity, partition %d: both agents wrote it (%v)", p, grew)
			case affinity:
				got := a1.addr
				if grew[0] == 0 {
					got = a2.addr
				}
				if got != where[p] {
					t.Fatalf("with affinity, partition %d written by %s, placement names %s", p, got, where[p])
				}
				writers[got]++
			}
		}
		if affinity && len(writers) != 2 {
			t.Fatalf("with affinity, partitions per writer %v: want both agents to write some", writers)
		}
		verifyLog(t, c1, topic, parts, acks)
	}
}

// TestPartitionAffinityAgentKilled: an idempotent producer with affinity,
// bootstrapped on agent 1, produces to every partition while agent 2 is
// killed (SIGKILL). Its partitions move to agent 1 (the retries of what
// was in flight first, in order); every acknowledged record is in the log
// once, at its offset, offsets dense.
func TestPartitionAffinityAgentKilled(t *testing.T) {
	a1, a2 := twoAgents(t)
	c1 := dialT(t, a1.addr)
	const parts = 8
	ctx := context.Background()
	if _, err := c1.CreateTopic(ctx, "kill", parts, nil); err != nil {
		t.Fatal(err)
	}
	where := placementOf(t, c1, "kill", 2)
	on2 := 0
	for _, w := range where {
		if w == a2.addr {
			on2++
		}
	}
	if on2 == 0 || on2 == parts {
		t.Fatalf("placement %v: want partitions on both agents", where)
	}
	var acks []acked
	pr := newAffinityProducer(t, c1, "kill", true, func(tag any, r *floev1.ProduceResponse) {
		a := tag.(acked)
		a.offset = r.GetOffsets()[0]
		acks = append(acks, a) // OnResult runs in Send and Flush: one goroutine
	})
	send := func(from, to int) {
		for seq := from; seq < to; seq++ {
			p := int32(seq % parts)
			err := pr.Send(p, []*floev1.Record{client.Value(nil, fmt.Appendf(nil, "p0-%d", seq))}, acked{producer: 0, seq: seq, partition: p})
			if err != nil {
				t.Fatalf("send %d: %v", seq, err)
			}
		}
	}
	send(0, 400)
	if err := pr.Flush(); err != nil {
		t.Fatal(err)
	}
	before2 := metricValue(t, a2.metrics, "floe_produced_records_total")
	if before2 == 0 {
		t.Fatal("agent 2 acknowledged nothing before the kill: the producer did not route to it")
	}
	// Kill agent 2 while requests are in flight to it.
	send(400, 440)
	a2.kill()
	send(440, 1200)
	if err := pr.Flush(); err != nil {
		t.Fatalf("flush after the kill: %v", err)
	}
	if len(acks) != 1200 {
		t.Fatalf("%d of 1200 sends acknowledged", len(acks))
	}
	verifyLog(t, c1, "kill", parts, acks)
}
