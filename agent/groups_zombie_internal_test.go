package agent

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// TestGroupSenderHoldsExpiredSession: a member's agent resumed after a
// pause longer than the session timeout (SIGSTOP) finds a record its
// reader had handed before the pause. The store has expired the member
// meanwhile and given its partitions to another; the record must not reach
// the client (a zombie delivery) while the control loop's next heartbeat
// is under way, nor after it learns of the fence. A record of the session
// that rejoined goes through.
func TestGroupSenderHoldsExpiredSession(t *testing.T) {
	st := &sentStream{}
	s := &groupSession{stream: st, out: make(chan outMsg), ctrlCh: make(chan struct{}, 1), beat: make(chan struct{}, 1),
		mem:            &subBuffer{own: semaphore.NewWeighted(10), all: newStreamBudget(10)},
		revokedAt:      map[int32]uint64{},
		readers:        map[int32]*groupReader{},
		releasing:      map[int32]releasing{},
		sessionTimeout: 6 * time.Second, gen: 1}
	s.accepted(time.Now().Add(-time.Minute)) // the last heartbeat, before the pause
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.send(ctx) }()
	hand := func(offset int64, gen uint64) {
		_ = s.mem.Acquire(ctx, 1) // as a reader does: its own buffer, then the stream budget
		_ = s.mem.Hold(ctx, 1)
		s.out <- outMsg{resp: &floev1.SubscribeResponse{Partition: 0, Records: []*floev1.Record{{Offset: offset}}}, weight: 1, gen: gen}
	}
	hand(7, 1)             // handed by the expired session's reader
	s.revokeAll()          // the control loop's heartbeat: fenced
	s.accepted(time.Now()) // rejoined
	hand(9, 3)             // a reader of the new assignment
	deadline := time.Now().Add(10 * time.Second)
	var offsets []int64
	for {
		st.mu.Lock()
		offsets = offsets[:0]
		for _, r := range st.sent {
			for _, rec := range r.GetRecords() {
				offsets = append(offsets, rec.GetOffset())
			}
		}
		st.mu.Unlock()
		if len(offsets) > 0 && offsets[len(offsets)-1] == 9 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if len(offsets) != 1 || offsets[0] != 9 {
		t.Fatalf("records sent at offsets %v, want only 9: 7 was handed by a session the store had expired", offsets)
	}
}

func TestMemberDelivery(t *testing.T) {
	now := time.Unix(1000, 0)
	const st = 6 * time.Second
	for _, c := range []struct {
		name                 string
		handedGen, fencedGen uint64
		lastBeat             time.Time
		want                 delivery
	}{
		{"fresh session", 3, 0, now.Add(-time.Second), deliverSend},
		{"just under the timeout", 3, 0, now.Add(-st + time.Millisecond), deliverSend},
		{"at the timeout: may have expired", 3, 0, now.Add(-st), deliverHold},
		{"long past it (a paused agent)", 3, 0, now.Add(-time.Minute), deliverHold},
		{"handed before a fence", 2, 3, now, deliverDrop},
		{"handed before a fence, still stale", 2, 3, now.Add(-time.Minute), deliverDrop},
		{"handed by a reader the fence's rejoin started", 3, 3, now, deliverSend},
		{"a reader of a later assignment", 5, 3, now.Add(-time.Second), deliverSend},
	} {
		if got := memberDelivery(c.handedGen, c.fencedGen, c.lastBeat, now, st); got != c.want {
			t.Errorf("%s: memberDelivery = %d, want %d", c.name, got, c.want)
		}
	}
}
