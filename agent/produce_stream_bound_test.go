package agent_test

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// gatedCommits lets a commit call through for each token on gate (all of
// them once gate is closed).
type gatedCommits struct {
	batcher.Committer
	gate chan struct{}
}

func (c gatedCommits) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	select {
	case <-c.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.Committer.CommitFiles(ctx, files)
}

// putLog keeps a copy of every object body put through it.
type putLog struct {
	objectstore.Store
	mu     sync.Mutex // protects bodies
	bodies [][]byte
}

func (s *putLog) Put(ctx context.Context, key string, data []byte, opts objectstore.PutOptions) error {
	s.mu.Lock()
	s.bodies = append(s.bodies, bytes.Clone(data))
	s.mu.Unlock()
	return s.Store.Put(ctx, key, data, opts)
}

// holds reports whether some body put so far contains marker.
func (s *putLog) holds(marker string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		if bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

// A produce stream holds at most MaxStreamInFlight unanswered requests:
// with a bound of 2 and every commit held back, the first two requests are
// appended and uploaded while the third waits unread in the transport;
// once one commit lands and its answer is sent, the third is appended.
// Every request is then answered, in order, at dense offsets.
func TestProduceStreamStopsAtInFlightBound(t *testing.T) {
	gate := make(chan struct{}, 8)
	puts := &putLog{}
	s := startGuarded(t, guardedConfig{
		agent:     func(a *agent.Config, _ *batcher.Config) { a.MaxStreamInFlight = 2 },
		committer: func(c batcher.Committer) batcher.Committer { return gatedCommits{c, gate} },
		store: func(st objectstore.Store) objectstore.Store {
			puts.Store = st
			return puts
		},
	})
	s.createTopic(t, "t", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := s.log.ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	markers := []string{"request-one", "request-two", "request-three"}
	for i, m := range markers {
		req := &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: []byte(m)}}}
		if err := stream.Send(&floev1.ProduceStreamRequest{RequestId: uint64(i + 1), Request: req}); err != nil {
			t.Fatal(err)
		}
	}
	answers := make(chan *floev1.ProduceStreamResponse, len(markers))
	recvErr := make(chan error, 1)
	go func() {
		for range markers {
			r, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			answers <- r
		}
		recvErr <- nil
	}()

	eventually(t, "the first two requests uploaded", func() bool { return puts.holds(markers[0]) && puts.holds(markers[1]) })
	time.Sleep(300 * time.Millisecond)
	if puts.holds(markers[2]) {
		t.Fatal("the third request was appended and uploaded while two were unanswered (bound 2)")
	}
	if len(answers) != 0 {
		t.Fatalf("%d answers before any commit", len(answers))
	}

	gate <- struct{}{} // one commit: the first file's requests are answered
	first := <-answers
	if id := first.GetRequestId(); (id != 1 && id != 2) || first.GetErrorCode() != 0 {
		t.Fatalf("first answer %v", first)
	}
	eventually(t, "the third request uploaded once an answer was sent", func() bool { return puts.holds(markers[2]) })

	close(gate)
	got := []*floev1.ProduceStreamResponse{first}
	for len(got) < len(markers) {
		select {
		case r := <-answers:
			got = append(got, r)
		case err := <-recvErr:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d answers", len(got), len(markers))
		}
	}
	// Requests committed together are answered in either order.
	sort.Slice(got, func(i, j int) bool { return got[i].GetRequestId() < got[j].GetRequestId() })
	for i, r := range got {
		if r.GetRequestId() != uint64(i+1) || r.GetErrorCode() != 0 {
			t.Fatalf("answer %d: %v", i, r)
		}
		if offs := r.GetResponse().GetOffsets(); len(offs) != 1 || offs[0] != int64(i) {
			t.Fatalf("request %d at offsets %v, want [%d]", i+1, offs, i)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
}
