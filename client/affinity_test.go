package client_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// switchableCluster is a view of the live agents the test changes.
type switchableCluster struct {
	mu     sync.Mutex // guards agents
	agents []metadata.AgentInfo
}

func (s *switchableCluster) LiveAgents() []metadata.AgentInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agents
}

func (s *switchableCluster) set(as ...metadata.AgentInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents = as
}

// servedAgent is an agent on a TCP port of its own that counts the
// produce messages it received.
type servedAgent struct {
	info     metadata.AgentInfo
	produced atomic.Int64
	served   *servedParts // the subscribe answers it sent, by partition
	kill     func()       // stops its gRPC server: its connections break
	// gate, when above 0, is how many subscribe answers with records the
	// agent sends in all: a later one waits until its stream ends (a stop
	// then lands with answers still unsent, whatever the machine's speed).
	gate atomic.Int64
}

// servedParts counts the subscribe answers an agent sent per partition.
type servedParts struct {
	mu    sync.Mutex // guards n and total
	n     map[int32]int
	total int
}

// add counts an answer of partition p and returns the answers counted.
func (s *servedParts) add(p int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[p]++
	s.total++
	return s.total
}

func (s *servedParts) snapshot() map[int32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]int, len(s.n))
	for p, n := range s.n {
		out[p] = n
	}
	return out
}

// startSharedAgents runs an agent per linger over one SQLite store and one
// in-memory object store, each answering DescribePlacement from cluster.
func startSharedAgents(t *testing.T, lingers []time.Duration, cluster *switchableCluster) []*servedAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := objectstore.NewMemory()
	var wg sync.WaitGroup
	var out []*servedAgent
	var stops []func()
	for i, linger := range lingers {
		bcfg := batcher.DefaultConfig()
		bcfg.Linger = linger
		var ag *agent.Agent
		b, err := batcher.New(bcfg, store, meta, batcher.Options{OnCommit: func(f batcher.CommittedFile) { ag.OnCommit(f) }})
		if err != nil {
			t.Fatal(err)
		}
		if ag, err = agent.New(agent.DefaultConfig(), meta, store, b, agent.Options{}); err != nil {
			t.Fatal(err)
		}
		ag.SetCluster(cluster)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sa := &servedAgent{info: metadata.AgentInfo{ID: fmt.Sprintf("agent-%d", i), NodeID: int32(i + 1), GRPCAddr: lis.Addr().String()},
			served: &servedParts{n: map[int32]int{}}}
		gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, countingStream{ServerStream: ss, n: &sa.produced, served: sa.served, gate: &sa.gate})
		}))
		sa.kill = gs.Stop
		ag.Register(gs)
		wg.Add(2)
		go func() { defer wg.Done(); _ = gs.Serve(lis) }()
		go func() { defer wg.Done(); _ = ag.Run(ctx) }()
		stops = append(stops, func() { gs.Stop(); _ = b.Close(context.Background()) })
		out = append(out, sa)
	}
	t.Cleanup(func() {
		for _, s := range stops {
			s()
		}
		cancel()
		wg.Wait()
		meta.Close()
	})
	return out
}

type countingStream struct {
	grpc.ServerStream
	n      *atomic.Int64
	served *servedParts
	gate   *atomic.Int64 // servedAgent.gate
}

func (s countingStream) SendMsg(m any) error {
	if r, ok := m.(*floev1.SubscribeResponse); ok && (len(r.GetBatches()) > 0 || len(r.GetRecords()) > 0) {
		if n, g := s.served.add(r.GetPartition()), s.gate.Load(); g > 0 && int64(n) > g {
			<-s.Context().Done() // held until the stream ends (the agent stopped)
			return s.Context().Err()
		}
	}
	return s.ServerStream.SendMsg(m)
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

// TestAffinityRouteChangeKeepsOrder: a plain (not idempotent) producer
// with affinity sends to every partition while the placement moves
// partitions from one agent to the other and back. Agent 2 lingers 150
// ms, agent 1 2 ms: a request still in flight on agent 2 when its
// partition moves would be stored after the next ones, sent to agent 1,
// unless it is answered first. So each partition must hold the producer's
// records in send order, every one acknowledged at its offset, offsets
// dense; and each phase's agents got the requests.
func TestAffinityRouteChangeKeepsOrder(t *testing.T) {
	cluster := &switchableCluster{}
	ags := startSharedAgents(t, []time.Duration{2 * time.Millisecond, 150 * time.Millisecond}, cluster)
	both := []metadata.AgentInfo{ags[0].info, ags[1].info}
	cluster.set(both...)
	ctx := context.Background()
	boot, err := client.Dial(ags[0].info.GRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	const parts = 6
	if _, err := boot.CreateTopic(ctx, "t", parts, nil); err != nil {
		t.Fatal(err)
	}
	acks := map[int32]map[int64]int{} // partition -> offset -> seq
	pr, err := boot.NewProducer(ctx, "t", client.ProducerOptions{Batches: true, PartitionAffinity: true, MaxInFlight: 16,
		Router: client.RouterOptions{Refresh: 100 * time.Millisecond},
		OnResult: func(tag any, r *floev1.ProduceResponse) {
			p := r.GetPartitions()[0]
			if acks[p] == nil {
				acks[p] = map[int64]int{}
			}
			acks[p][r.GetOffsets()[0]] = tag.(int)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	seq := 0
	phase := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); seq++ {
			p := int32(seq % parts)
			if err := pr.Send(p, []*floev1.Record{client.Value(nil, fmt.Appendf(nil, "%d", seq))}, seq); err != nil {
				t.Fatalf("send %d: %v", seq, err)
			}
		}
	}
	counts := func() [2]int64 { return [2]int64{ags[0].produced.Load(), ags[1].produced.Load()} }
	phase(500 * time.Millisecond)
	c1 := counts()
	if c1[0] == 0 || c1[1] == 0 {
		t.Fatalf("with both agents placed, produce messages per agent %v: want both", c1)
	}
	// The placement changes while requests are in flight.
	flip := func(as ...metadata.AgentInfo) {
		time.AfterFunc(200*time.Millisecond, func() { cluster.set(as...) })
		phase(800 * time.Millisecond)
	}
	flip(ags[0].info) // agent 2's partitions move to agent 1
	// Once the producer's router has refreshed, agent 2 gets nothing more.
	for try := 0; ; try++ {
		mid := counts()
		phase(300 * time.Millisecond)
		if counts()[1] == mid[1] {
			break
		}
		if try == 30 {
			t.Fatalf("agent 2 still gets produce messages long after leaving the placement")
		}
	}
	c2 := counts()
	flip(both...) // and back
	if err := pr.Flush(); err != nil {
		t.Fatal(err)
	}
	if c3 := counts(); c3[1] == c2[1] {
		t.Fatalf("agent 2 got nothing after rejoining the placement")
	}
	n := 0
	for p := int32(0); p < parts; p++ {
		want := acks[p]
		n += len(want)
		var got []string
		for off := int64(0); ; {
			f, err := boot.Fetch(ctx, "t", p, off, 1<<20, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.GetRecords()) == 0 {
				break
			}
			for _, r := range f.GetRecords() {
				if r.GetOffset() != off {
					t.Fatalf("partition %d: offset %d after %d", p, r.GetOffset(), off-1)
				}
				got = append(got, string(r.GetValue()))
				off++
			}
		}
		if len(got) != len(want) {
			t.Fatalf("partition %d: %d records stored, %d acknowledged", p, len(got), len(want))
		}
		for off, v := range got {
			if seq, ok := want[int64(off)]; !ok || v != fmt.Sprint(seq) {
				t.Fatalf("partition %d: offset %d holds %q; acknowledged there: %d (%v)", p, off, v, seq, ok)
			}
			if off > 0 && want[int64(off)] <= want[int64(off-1)] {
				t.Fatalf("partition %d: seq %d stored after %d: reordered", p, want[int64(off)], want[int64(off-1)])
			}
		}
	}
	if n != seq {
		t.Fatalf("%d of %d sends acknowledged", n, seq)
	}
}
