package main_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/internal/testenv"
)

// TestKafkaSurvivesAgentKill: two `floe agent` processes on PostgreSQL and
// S3. A franz-go idempotent producer (seeded with both) sends numbered
// records to 4 partitions while a classic group of two franz-go members
// consumes and commits; the group's coordinator agent is SIGKILLed half
// way. The history check: every produce is acknowledged, each partition's
// log holds every record exactly once in the order sent (no duplicate, no
// loss, order kept), and the group consumed every record (none lost
// across the rebalance) and committed the end of the log.
func TestKafkaSurvivesAgentKill(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	args := []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style",
		"-s3-prefix", "kkill", "-kafka-listen", "127.0.0.1:0", "-kafka-agent-ttl", "2s"}
	p1, p2 := startFloe(t, args...), startFloe(t, args...)
	k1, k2 := p1.kafkaAddr(t), p2.kafkaAddr(t)
	procs := map[string]*proc{k1: p1, k2: p2}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic, group, parts, perPart = "kk", "kk-group", 4, 500
	opts := []kgo.Opt{kgo.SeedBrokers(k1, k2), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}
	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// The group: two members, each bootstrapped from one agent.
	type seen struct {
		part  int32
		value string
	}
	var mu sync.Mutex // protects consumed
	var consumed []seen
	var wg sync.WaitGroup
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	for _, seed := range []string{k1, k2} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.HeartbeatInterval(200*time.Millisecond), kgo.SessionTimeout(6*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for cctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(cctx, 500*time.Millisecond)
				fs := cl.PollFetches(pctx)
				pcancel()
				recs := fs.Records()
				mu.Lock()
				for _, r := range recs {
					consumed = append(consumed, seen{r.Partition, string(r.Value)})
				}
				mu.Unlock()
				// What was polled and not yet committed, every round: a
				// commit a rebalance refused is sent again (as a Kafka
				// client's auto-commit does), not left behind.
				if err := cl.CommitUncommittedOffsets(cctx); err != nil && cctx.Err() == nil {
					t.Logf("commit (seed %s): %v", seed, err)
				}
			}
		}()
	}
	defer func() { ccancel(); wg.Wait() }() // no member logs after the test ends

	prod, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var acked sync.WaitGroup
	var perr error
	var emu sync.Mutex // protects perr
	send := func(from, to int) {
		for i := from; i < to; i++ {
			for p := range int32(parts) {
				acked.Add(1)
				prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%06d", p, i)}, func(_ *kgo.Record, err error) {
					if err != nil {
						emu.Lock()
						perr = err
						emu.Unlock()
					}
					acked.Done()
				})
			}
			if i%50 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	send(0, perPart/2)
	// SIGKILL the group's coordinator while records are in flight.
	coord := adm.FindGroupCoordinators(ctx, group)[group]
	victim := net.JoinHostPort(coord.Host, strconv.Itoa(int(coord.Port)))
	if procs[victim] == nil || coord.Err != nil {
		t.Fatalf("coordinator %+v is not one of the agents %s, %s", coord, k1, k2)
	}
	procs[victim].kill()
	send(perPart/2, perPart)
	acked.Wait()
	if perr != nil {
		t.Fatalf("a produce failed: %v", perr)
	}

	// The log: every record once, in order, per partition.
	rd, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	logs := map[int32][]string{}
	for n := 0; n < parts*perPart && ctx.Err() == nil; {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			logs[r.Partition] = append(logs[r.Partition], string(r.Value))
			n++
		})
	}
	for p := range int32(parts) {
		if len(logs[p]) != perPart {
			t.Fatalf("partition %d holds %d records, want %d", p, len(logs[p]), perPart)
		}
		for i, v := range logs[p] {
			if want := fmt.Sprintf("%d-%06d", p, i); v != want {
				t.Fatalf("partition %d offset %d holds %q, want %q (duplicate, loss or reorder)", p, i, v, want)
			}
		}
	}
	// The group: every record consumed, and the end committed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := map[string]bool{}
		for _, s := range consumed {
			got[s.value] = true
		}
		mu.Unlock()
		if len(got) == parts*perPart {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group consumed %d distinct records of %d", len(got), parts*perPart)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		var sum int64
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		}
		if sum == parts*perPart {
			break
		}
		if time.Now().After(deadline) {
			offs.Each(func(o kadm.OffsetResponse) { t.Logf("partition %d committed %d (%v)", o.Partition, o.At, o.Err) })
			t.Fatalf("committed %d of %d (%v)", sum, parts*perPart, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ccancel()
	wg.Wait()
}
