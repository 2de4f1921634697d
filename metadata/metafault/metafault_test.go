package metafault_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// TestMain stops the test PostgreSQL server (conformance_test.go) after the
// tests, then checks that no goroutine is left.
func TestMain(m *testing.M) { testenv.Main(m, testenv.VerifyNoLeaks()) }

// TestFaultsAreCountedAndConsumed: queued faults apply to the next calls in
// order, a standing fault to every call without a queued one, Reset stops
// both; every call is counted by operation and mode.
func TestFaultsAreCountedAndConsumed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inner, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	s := metafault.Wrap(inner)
	defer s.Close()

	s.Next(metafault.OpTopics, 1, metafault.Fault{Mode: metafault.AnswerLost})
	s.Always(metafault.OpTopics, metafault.Fault{Mode: metafault.Refused})
	_, err = s.CreateTopic(ctx, metadata.TopicSpec{Name: "a", Partitions: 1})
	if err == nil || metadata.NotApplied(err) || !errors.Is(err, metafault.ErrInjected) {
		t.Fatalf("answer lost: %v, want an ambiguous injected error", err)
	}
	if _, err := s.DescribeTopic(ctx, "a"); !metadata.NotApplied(err) {
		t.Fatalf("standing refusal: %v, want NotApplied", err)
	}
	s.Reset()
	if d, err := s.DescribeTopic(ctx, "a"); err != nil || d.Name != "a" {
		t.Fatalf("after Reset: %+v, %v; want the topic created by the call whose answer was lost", d, err)
	}
	if got := [3]int{s.Calls(metafault.OpTopics), s.Injected(metafault.OpTopics, metafault.AnswerLost),
		s.Injected(metafault.OpTopics, metafault.Refused)}; got != [3]int{3, 1, 1} {
		t.Errorf("calls, answers lost, refusals = %v, want [3 1 1]", got)
	}

	s.Next(metafault.OpPing, 1, metafault.Fault{Mode: metafault.Hung})
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	err = s.Ping(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) || metadata.NotApplied(err) {
		t.Fatalf("hung ping: %v, want an ambiguous DeadlineExceeded", err)
	}
	s.Next(metafault.OpInitProducer, 1, metafault.Fault{Mode: metafault.Refused})
	if _, _, err := s.InitProducer(ctx); !metadata.NotApplied(err) {
		t.Fatalf("refused InitProducer: %v", err)
	}
	if id, _, err := s.InitProducer(ctx); err != nil || id != 1 {
		t.Fatalf("InitProducer after a refusal: %d, %v; want id 1 (the refused call issued none)", id, err)
	}
	if metafault.Hung.String() != "hung" || metafault.Mode(9).String() != "Mode(9)" {
		t.Error("Mode.String")
	}
}
