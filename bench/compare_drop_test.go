package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// dropSystem acknowledges every record at once and records the topics it
// was asked to create and to drop.
type dropSystem struct {
	mu           sync.Mutex // protects set, dropped
	set, dropped []string
}

func (s *dropSystem) Name() string { return "drop" }
func (s *dropSystem) Setup(_ context.Context, topic string, _ int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set = append(s.set, topic)
	return nil
}
func (s *dropSystem) DropTopic(_ context.Context, topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped = append(s.dropped, topic)
	return nil
}
func (s *dropSystem) NewProducer(context.Context, int) (Producer, error) { return ackAll{}, nil }
func (s *dropSystem) Consume(ctx context.Context, _, _ int, _ bool, _ func([]byte)) error {
	<-ctx.Done()
	return nil
}
func (s *dropSystem) Stats(context.Context) (ServerStats, error) { return ServerStats{}, nil }
func (s *dropSystem) Close() error                               { return nil }

type ackAll struct{}

func (ackAll) Send(_ context.Context, b *Batch, done func(from, to int, err error)) error {
	done(0, len(b.Intended), nil)
	return nil
}
func (ackAll) Close(context.Context) error { return nil }

// Every run of a comparison writes its own topic; each is dropped once
// measured, so that the disk holds one run's data, not all of them.
func TestCompareDropsEachRunsTopic(t *testing.T) {
	sys := &dropSystem{}
	_, err := RunCompare(context.Background(), CompareConfig{
		Run: RunConfig{Workload: WorkloadProduce, Topic: "cmp", Partitions: 1, Producers: 1, RecordSize: 64,
			Duration: 100 * time.Millisecond, MaxBatch: 10, Tick: time.Millisecond},
		Targets: []CompareTarget{{System: sys, Label: "drop"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sys.mu.Lock()
	defer sys.mu.Unlock()
	if len(sys.set) < 3 {
		t.Fatalf("runs' topics %v: want at least the closed loop, one search step and the half", sys.set)
	}
	if !slices.Equal(sys.set, sys.dropped) {
		t.Fatalf("topics created %v, dropped %v: want each dropped after its run", sys.set, sys.dropped)
	}
}
