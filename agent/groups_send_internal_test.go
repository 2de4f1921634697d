package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// sentStream records what a group session sends.
type sentStream struct {
	floev1.LogService_SubscribeServer
	mu   sync.Mutex // protects sent
	sent []*floev1.SubscribeResponse
}

func (s *sentStream) Send(r *floev1.SubscribeResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, r)
	return nil
}

// TestGroupSenderOrder: a message a reader handed before the assignment
// that revoked its partition was queued is sent before that assignment
// (records after their revocation reached the client); a message of a
// reader granted by it goes after. The revocation is queued while the
// sender holds the message, as the control loop does once the reader it
// stops has handed it.
func TestGroupSenderOrder(t *testing.T) {
	for _, gen := range []uint64{1, 2} { // 1: handed by the revoked reader; 2: by a reader the revocation granted
		st := &sentStream{}
		s := &groupSession{stream: st, out: make(chan outMsg), ctrlCh: make(chan struct{}, 1),
			mem: &subBuffer{own: semaphore.NewWeighted(10), all: newStreamBudget(10)}, revokedAt: map[int32]uint64{},
			beat: make(chan struct{}, 1), sessionTimeout: time.Minute}
		s.accepted(time.Now())
		queue := func() {
			s.ctrlMu.Lock()
			defer s.ctrlMu.Unlock()
			s.gen = 2
			s.ctrl = &floev1.GroupAssignment{Revoked: []int32{0}}
			s.revokedAt[0] = 2
			select {
			case s.ctrlCh <- struct{}{}:
			default:
			}
		}
		if gen == 1 {
			s.onReceive = queue
		} else {
			queue()
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.send(ctx) }()
		_ = s.mem.Acquire(ctx, 1) // as a reader does: its own buffer, then the stream budget
		_ = s.mem.Hold(ctx, 1)
		s.out <- outMsg{resp: &floev1.SubscribeResponse{Partition: 0, Records: []*floev1.Record{{Offset: 7}}}, weight: 1, gen: gen}
		deadline := time.Now().Add(5 * time.Second)
		for {
			st.mu.Lock()
			n := len(st.sent)
			st.mu.Unlock()
			if n == 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		if len(st.sent) != 2 || (st.sent[0].GetAssignment() != nil) != (gen == 2) {
			t.Errorf("reader gen %d: sent %v", gen, st.sent)
		}
	}
}
