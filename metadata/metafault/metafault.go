// Package metafault wraps a metadata.Store to inject faults, for tests of
// what callers do when the store fails: a commit applied whose answer is
// lost, a commit refused before it reached the store, latency, and calls
// that hang until their context ends. Faults are set per operation and
// consumed per call ("the next 2 commits lose their answer"), so tests are
// deterministic.
package metafault

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// ErrInjected is wrapped by every error the wrapper makes up.
var ErrInjected = errors.New("metafault: injected fault")

// Op is a group of Store methods that share faults.
type Op string

const (
	OpCommit       Op = "commit"        // CommitFile, CommitFiles (one fault per call, whatever its files)
	OpRead         Op = "read"          // FindBatches, ListOffset, PartitionStates
	OpTopics       Op = "topics"        // CreateTopic, DeleteTopic, ListTopics, DescribeTopic, TopicByID
	OpInitProducer Op = "init-producer" // InitProducer
	OpPing         Op = "ping"          // Ping
)

// Mode is what a faulty call does.
type Mode int

const (
	// Pass calls the inner store (after the fault's Latency, if any).
	Pass Mode = iota
	// AnswerLost calls the inner store, which applies the call, and then
	// returns an ambiguous error (not metadata.NotApplied), as when the
	// connection drops after the database committed.
	AnswerLost
	// Refused returns an error wrapping metadata.ErrNotApplied without
	// calling the inner store, as when the database cannot be reached.
	Refused
	// Hung blocks until the call's context ends, then returns an ambiguous
	// error wrapping the context's, without calling the inner store.
	Hung
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case AnswerLost:
		return "answer lost"
	case Refused:
		return "refused"
	case Hung:
		return "hung"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Fault is what one call does: Latency first (a context that ends during it
// makes the call fail, not applied), then Mode.
type Fault struct {
	Mode    Mode
	Latency time.Duration
}

// Store is a metadata.Store that injects the faults it is told to.
// Notices and Close pass through.
type Store struct {
	inner metadata.Store

	mu       sync.Mutex          // protects next, always, calls, injected
	next     map[Op][]Fault      // faults of the next calls, in order
	always   map[Op]Fault        // the fault of calls with none queued
	calls    map[Op]int          // calls made, per operation
	injected map[Op]map[Mode]int // faults applied, per operation and mode (Pass with latency counts as Pass)
}

var _ metadata.Store = (*Store)(nil)

// Wrap returns s with no faults set.
func Wrap(s metadata.Store) *Store {
	return &Store{inner: s, next: map[Op][]Fault{}, always: map[Op]Fault{}, calls: map[Op]int{},
		injected: map[Op]map[Mode]int{}}
}

// Inner returns the wrapped store.
func (s *Store) Inner() metadata.Store { return s.inner }

// Next makes the next n calls of op (after those already queued) do f.
func (s *Store) Next(op Op, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.next[op] = append(s.next[op], f)
	}
}

// Always makes every call of op with no queued fault do f; Fault{} stops it.
func (s *Store) Always(op Op, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always[op] = f
}

// Reset drops every queued and standing fault (counters stay).
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.next)
	clear(s.always)
}

// Calls returns how many calls of op were made.
func (s *Store) Calls(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Injected returns how many calls of op did mode.
func (s *Store) Injected(op Op, mode Mode) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.injected[op][mode]
}

// Pending returns how many queued faults of op are left.
func (s *Store) Pending(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.next[op])
}

// take draws the fault of one call of op.
func (s *Store) take(op Op) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	f := s.always[op]
	if q := s.next[op]; len(q) > 0 {
		f, s.next[op] = q[0], q[1:]
	}
	if s.injected[op] == nil {
		s.injected[op] = map[Mode]int{}
	}
	s.injected[op][f.Mode]++
	return f
}

// call runs fn under op's next fault.
func call[T any](ctx context.Context, s *Store, op Op, fn func() (T, error)) (T, error) {
	var zero T
	f := s.take(op)
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return zero, fmt.Errorf("%w: %s: %w during latency: %w", ErrInjected, op, metadata.ErrNotApplied, ctx.Err())
		}
	}
	switch f.Mode {
	case AnswerLost:
		_, err := fn()
		if err != nil {
			return zero, fmt.Errorf("%w: %s: answer lost (the call failed: %w)", ErrInjected, op, err)
		}
		return zero, fmt.Errorf("%w: %s: applied, answer lost", ErrInjected, op)
	case Refused:
		return zero, fmt.Errorf("%w: %s: %w: refused", ErrInjected, op, metadata.ErrNotApplied)
	case Hung:
		<-ctx.Done()
		return zero, fmt.Errorf("%w: %s: hung: %w", ErrInjected, op, ctx.Err())
	}
	return fn()
}

// CommitFile implements metadata.Store.
func (s *Store) CommitFile(ctx context.Context, f metadata.FileCommit) ([]metadata.BatchResult, error) {
	return call(ctx, s, OpCommit, func() ([]metadata.BatchResult, error) { return s.inner.CommitFile(ctx, f) })
}

// CommitFiles implements metadata.Store. A call is one OpCommit, so a lost
// answer loses every file's results at once, as a lost transaction does.
func (s *Store) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	return call(ctx, s, OpCommit, func() ([][]metadata.BatchResult, error) { return s.inner.CommitFiles(ctx, files) })
}

// FindBatches implements metadata.Store.
func (s *Store) FindBatches(ctx context.Context, topicID int64, partition int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	type found struct {
		refs []metadata.BatchRef
		st   metadata.PartitionState
	}
	r, err := call(ctx, s, OpRead, func() (found, error) {
		refs, st, err := s.inner.FindBatches(ctx, topicID, partition, offset, maxBytes)
		return found{refs, st}, err
	})
	return r.refs, r.st, err
}

// ListOffset implements metadata.Store.
func (s *Store) ListOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error) {
	return call(ctx, s, OpRead, func() (int64, error) { return s.inner.ListOffset(ctx, topicID, partition, spec, ts) })
}

// PartitionStates implements metadata.Store.
func (s *Store) PartitionStates(ctx context.Context, topicID int64) ([]metadata.PartitionState, error) {
	return call(ctx, s, OpRead, func() ([]metadata.PartitionState, error) { return s.inner.PartitionStates(ctx, topicID) })
}

// CreateTopic implements metadata.Store.
func (s *Store) CreateTopic(ctx context.Context, spec metadata.TopicSpec) (metadata.Topic, error) {
	return call(ctx, s, OpTopics, func() (metadata.Topic, error) { return s.inner.CreateTopic(ctx, spec) })
}

// DeleteTopic implements metadata.Store.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	_, err := call(ctx, s, OpTopics, func() (struct{}, error) { return struct{}{}, s.inner.DeleteTopic(ctx, name) })
	return err
}

// ListTopics implements metadata.Store.
func (s *Store) ListTopics(ctx context.Context) ([]metadata.Topic, error) {
	return call(ctx, s, OpTopics, func() ([]metadata.Topic, error) { return s.inner.ListTopics(ctx) })
}

// DescribeTopic implements metadata.Store.
func (s *Store) DescribeTopic(ctx context.Context, name string) (metadata.TopicDescription, error) {
	return call(ctx, s, OpTopics, func() (metadata.TopicDescription, error) { return s.inner.DescribeTopic(ctx, name) })
}

// TopicByID implements metadata.Store.
func (s *Store) TopicByID(ctx context.Context, id int64) (metadata.Topic, error) {
	return call(ctx, s, OpTopics, func() (metadata.Topic, error) { return s.inner.TopicByID(ctx, id) })
}

// InitProducer implements metadata.Store.
func (s *Store) InitProducer(ctx context.Context) (int64, int16, error) {
	type producer struct {
		id    int64
		epoch int16
	}
	p, err := call(ctx, s, OpInitProducer, func() (producer, error) {
		id, epoch, err := s.inner.InitProducer(ctx)
		return producer{id, epoch}, err
	})
	return p.id, p.epoch, err
}

// Ping implements metadata.Store.
func (s *Store) Ping(ctx context.Context) error {
	_, err := call(ctx, s, OpPing, func() (struct{}, error) { return struct{}{}, s.inner.Ping(ctx) })
	return err
}

// Notices implements metadata.Store, without faults.
func (s *Store) Notices(ctx context.Context) (<-chan metadata.Notice, error) {
	return s.inner.Notices(ctx)
}

// Close implements metadata.Store: it closes the inner store.
func (s *Store) Close() error { return s.inner.Close() }
