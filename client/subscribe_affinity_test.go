package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
)

const readParts = 8

// readAffinitySetup runs two agents, both in the placement, and a topic of
// readParts partitions holding perPart records each ("p<partition>-<offset>").
// It returns the agents, the bootstrap connection (agent 1), and the
// index of the agent DescribePlacement prefers for each partition.
func readAffinitySetup(t *testing.T, perPart int) ([]*servedAgent, *client.Client, []int) {
	t.Helper()
	cluster := &switchableCluster{}
	ags := startSharedAgents(t, []time.Duration{2 * time.Millisecond, 2 * time.Millisecond}, cluster)
	cluster.set(ags[0].info, ags[1].info)
	ctx := context.Background()
	boot, err := client.Dial(ags[0].info.GRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { boot.Close() })
	if _, err := boot.CreateTopic(ctx, "t", readParts, nil); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < readParts; p++ {
		for off := 0; off < perPart; off += 50 {
			var recs []*floev1.Record
			for o := off; o < min(off+50, perPart); o++ {
				recs = append(recs, client.Value(nil, fmt.Appendf(nil, "p%d-%d", p, o)))
			}
			if _, err := boot.Produce(ctx, "t", p, recs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	pl, err := boot.Topics.DescribePlacement(ctx, &floev1.DescribePlacementRequest{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	owner := make([]int, readParts)
	var per [2]int
	for p, node := range pl.GetPartitionAgents() {
		owner[p] = int(node) - 1 // NodeID is index+1
		per[owner[p]]++
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("placement %v: want partitions on both agents", pl.GetPartitionAgents())
	}
	return ags, boot, owner
}

// reader checks that records arrive once each, in offset order per
// partition, with the values produced.
type reader struct {
	next  map[int32]int64
	total int
}

func (r *reader) record(p int32, off int64, value []byte) error {
	if off != r.next[p] {
		return fmt.Errorf("partition %d: record at offset %d, expected %d", p, off, r.next[p])
	}
	if want := fmt.Sprintf("p%d-%d", p, off); string(value) != want {
		return fmt.Errorf("partition %d offset %d: value %q, want %q", p, off, value, want)
	}
	r.next[p]++
	r.total++
	return nil
}

// TestReadAffinityEachAgentServesItsPartitions: with read affinity each
// agent sends answers only of the partitions the placement gives it (and
// both send some); without it (SubscribeResume through the bootstrap) the
// other agent sends none. Every record is read once, in order, both ways.
func TestReadAffinityEachAgentServesItsPartitions(t *testing.T) {
	const perPart = 200
	ags, boot, owner := readAffinitySetup(t, perPart)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	router, err := client.NewRouter(ctx, boot, "t", client.RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	req := &floev1.SubscribeRequest{Topic: "t", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}},
		MaxBytes: 2048, Batches: true}
	read := func(sub func(fn func(*floev1.SubscribeResponse) error) error) {
		t.Helper()
		r := &reader{next: map[int32]int64{}}
		err := sub(func(resp *floev1.SubscribeResponse) error {
			for _, rec := range resp.GetRecords() {
				if err := r.record(resp.GetPartition(), rec.GetOffset(), rec.GetValue()); err != nil {
					return err
				}
			}
			if r.total == readParts*perPart {
				return client.ErrStop
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read(func(fn func(*floev1.SubscribeResponse) error) error {
		return client.SubscribeAffinity(ctx, router, req, client.ResumeOptions{}, fn)
	})
	for i, a := range ags {
		served := a.served.snapshot()
		if len(served) == 0 {
			t.Fatalf("with read affinity agent %d served nothing", i+1)
		}
		for p := range served {
			if owner[p] != i {
				t.Fatalf("with read affinity agent %d served partition %d, placed on agent %d (served %v)", i+1, p, owner[p]+1, served)
			}
		}
	}
	before := ags[1].served.snapshot()
	read(func(fn func(*floev1.SubscribeResponse) error) error {
		return client.SubscribeResume(ctx, []*client.Client{boot}, req, client.ResumeOptions{}, fn)
	})
	if after := ags[1].served.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("without read affinity agent 2 served %v (before %v): want nothing more", after, before)
	}
	for p := range readParts {
		if owner[p] == 1 && ags[0].served.snapshot()[int32(p)] == 0 {
			t.Fatalf("without read affinity agent 1 did not serve partition %d", p)
		}
	}
}

// sum is the answers of served.
func sum(served map[int32]int) int {
	n := 0
	for _, v := range served {
		n += v
	}
	return n
}

// TestReadAffinityAgentKilledMidRead: agent 2 is stopped while the
// consumer reads its partitions from it (SubscribeAffinityBatches); its
// partitions continue from the bootstrap agent, and every record is read
// exactly once, in offset order per partition.
func TestReadAffinityAgentKilledMidRead(t *testing.T) {
	const perPart = 600
	ags, boot, owner := readAffinitySetup(t, perPart)
	// Agent 2 sends a few answers only, so that its stop lands mid-read
	// however fast it would otherwise push its partitions into the
	// consumer's flow-control windows (it had sent them all on a fast
	// machine, and no stream failed).
	ags[1].gate.Store(4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	router, err := client.NewRouter(ctx, boot, "t", client.RouterOptions{DownFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	var killedAt map[int32]int // agent 2's answers per partition when it was stopped
	r := &reader{next: map[int32]int64{}}
	req := &floev1.SubscribeRequest{Topic: "t", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}},
		MaxBytes: 2048}
	retries := 0
	err = client.SubscribeAffinityBatches(ctx, router, req, client.ResumeOptions{OnRetry: func(string, error, time.Duration) { retries++ }},
		func(resp *floev1.SubscribeResponse, from int64) error {
			p := resp.GetPartition()
			_, err := client.WalkBatches(resp.GetBatches(), from, 0, func(kr *kbatch.Record) error {
				return r.record(p, kr.Offset, kr.Value)
			})
			if err != nil {
				return err
			}
			if served := ags[1].served.snapshot(); killedAt == nil && len(served) > 0 && (r.total >= readParts*perPart/4 || sum(served) >= 4) {
				ags[1].kill()
				killedAt = ags[1].served.snapshot()
			}
			if r.total == readParts*perPart {
				return client.ErrStop
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if killedAt == nil {
		t.Fatal("agent 2 was never stopped")
	}
	if retries == 0 {
		t.Fatal("no stream failed: the stop did not land mid-read")
	}
	for p := range readParts {
		if r.next[int32(p)] != perPart {
			t.Fatalf("partition %d: read up to %d, want %d", p, r.next[int32(p)], perPart)
		}
	}
	// Agent 2's partitions were finished by agent 1.
	moved := false
	for p, n := range ags[0].served.snapshot() {
		if owner[p] == 1 && n > 0 {
			moved = true
		}
	}
	if !moved {
		t.Fatalf("agent 1 served none of agent 2's partitions after the stop (agent 2 had served %v)", killedAt)
	}
}
