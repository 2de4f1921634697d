package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

type staticCluster []metadata.AgentInfo

func (c staticCluster) LiveAgents() []metadata.AgentInfo { return c }

// servedBy counts the subscribe answers with data an agent sent, by
// partition.
type servedBy struct {
	mu sync.Mutex // guards n
	n  map[int32]int
}

func (s *servedBy) snapshot() map[int32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]int, len(s.n))
	for p, n := range s.n {
		out[p] = n
	}
	return out
}

type servedStream struct {
	grpc.ServerStream
	s *servedBy
}

func (st servedStream) SendMsg(m any) error {
	if r, ok := m.(*floev1.SubscribeResponse); ok && len(r.GetBatches()) > 0 {
		st.s.mu.Lock()
		st.s.n[r.GetPartition()]++
		st.s.mu.Unlock()
	}
	return st.ServerStream.SendMsg(m)
}

// twoAgents runs two in-process agents on loopback ports over one SQLite
// store and one in-memory object store, both in the placement: their
// gRPC addresses and what each served.
func twoAgents(t *testing.T) ([]string, []*servedBy) {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() }) // after the agents' stops
	store := objectstore.NewMemory()
	var cluster staticCluster
	var ags []*agenttest.Agent
	var served []*servedBy
	for i := range 2 {
		s := &servedBy{n: map[int32]int{}}
		o := agenttest.Default()
		o.TCP = true
		o.ServerOptions = []grpc.ServerOption{grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, servedStream{ServerStream: ss, s: s})
		})}
		a := agenttest.Start(t, meta, store, o)
		ags, served = append(ags, a), append(served, s)
		cluster = append(cluster, metadata.AgentInfo{ID: fmt.Sprintf("agent-%d", i), NodeID: int32(i + 1), GRPCAddr: a.Addr})
	}
	addrs := make([]string, len(ags))
	for i, a := range ags {
		a.Agent.SetCluster(cluster)
		addrs[i] = a.Addr
	}
	return addrs, served
}

// TestFloeAffinityConsumersReadFromTheirAgent: with FloeConfig.Affinity
// the harness's consumer reads each partition from the agent the
// placement prefers for it (both agents serve, each only its own
// partitions); without it the consumer's one agent serves everything.
// Every record is read once both ways.
func TestFloeAffinityConsumersReadFromTheirAgent(t *testing.T) {
	const parts, batches, perBatch = 8, 10, 100
	addrs, served := twoAgents(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sys, err := NewFloeSystem(FloeConfig{Addrs: addrs, RecordSize: 64, MaxInFlight: 4, Affinity: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if err := sys.Setup(ctx, "t", parts); err != nil {
		t.Fatal(err)
	}
	pr, err := sys.NewProducer(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards failed
	failed := 0
	for i := range batches {
		b := &Batch{First: int64(i * perBatch), Intended: make([]int64, perBatch)}
		err := pr.Send(ctx, b, func(from, to int, err error) {
			if err != nil {
				mu.Lock()
				failed += to - from
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := pr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if failed > 0 {
		t.Fatalf("%d records not acknowledged", failed)
	}
	readAll := func(s *FloeSystem) {
		t.Helper()
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		seen := map[uint64]bool{}
		err := s.Consume(cctx, 0, 1, true, func(v []byte) {
			idx := binary.BigEndian.Uint64(v[8:16])
			if seen[idx] {
				t.Errorf("record %d read twice", idx)
			}
			seen[idx] = true
			if len(seen) == batches*perBatch {
				stop()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != batches*perBatch {
			t.Fatalf("read %d records, want %d", len(seen), batches*perBatch)
		}
	}
	readAll(sys)
	pl, err := sys.clients[0].Topics.DescribePlacement(ctx, &floev1.DescribePlacementRequest{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range served {
		got := s.snapshot()
		if len(got) == 0 {
			t.Fatalf("with affinity agent %d served nothing", i+1)
		}
		for p := range got {
			if node := pl.GetPartitionAgents()[p]; node != int32(i+1) {
				t.Fatalf("with affinity agent %d served partition %d, placed on node %d", i+1, p, node)
			}
		}
	}
	// Without affinity consumer 0 reads every partition from Addrs[1].
	plain, err := NewFloeSystem(FloeConfig{Addrs: addrs, RecordSize: 64, MaxInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plain.topic, plain.parts = "t", parts
	before := served[0].snapshot()
	readAll(plain)
	if after := served[0].snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("without affinity agent 1 served %v (before %v): want nothing more", after, before)
	}
	if got := served[1].snapshot(); len(got) != parts {
		t.Fatalf("without affinity agent 2 served partitions %v: want all %d", got, parts)
	}
}

func TestAffinityShare(t *testing.T) {
	// a owns 0, 2, 3, 6; b owns 1, 4, 7; c owns 5.
	owner := []string{"a", "b", "a", "a", "b", "c", "a", "b"}
	cases := []struct {
		n    int
		want [][]int32
	}{
		{1, [][]int32{{0, 1, 2, 3, 4, 5, 6, 7}}},
		{2, [][]int32{{0, 2, 3, 5, 6}, {1, 4, 7}}}, // agents a, c | b
		{3, [][]int32{{0, 2, 3, 6}, {1, 4, 7}, {5}}},
		{4, [][]int32{{0, 3}, {1, 4, 7}, {5}, {2, 6}}},          // a split over consumers 0 and 3
		{7, [][]int32{{0, 6}, {1, 7}, {5}, {2}, {4}, nil, {3}}}, // a over 0, 3, 6; b over 1, 4; c over 2, 5
	}
	for _, c := range cases {
		seen := map[int32]int{}
		for i := range c.n {
			got := affinityShare(owner, i, c.n)
			if fmt.Sprint(got) != fmt.Sprint(c.want[i]) {
				t.Errorf("n=%d consumer %d: %v, want %v", c.n, i, got, c.want[i])
			}
			for _, p := range got {
				seen[p]++
			}
		}
		for p := range owner {
			if seen[int32(p)] != 1 {
				t.Errorf("n=%d: partition %d read by %d consumers, want 1", c.n, p, seen[int32(p)])
			}
		}
	}
}
