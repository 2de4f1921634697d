package metadatatest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testReinitProducer: ReinitProducer follows metadata.DecideProducerInit
// on the stored epochs: a bump, a retried bump, a fenced stale epoch, a
// locally bumped epoch, a new id for an exhausted epoch or an id never
// issued, and a refusal of half a pair.
func testReinitProducer(t *testing.T, s metadata.Store) {
	c := ctx(t)
	pid := producers(t, s, 1)
	step := func(what string, id int64, epoch int16, wantID int64, wantEpoch int16) {
		t.Helper()
		gotID, gotEpoch, err := s.ReinitProducer(c, id, epoch)
		if err != nil || gotID != wantID || gotEpoch != wantEpoch {
			t.Fatalf("%s: ReinitProducer(%d, %d) = %d, %d, %v; want %d, %d", what, id, epoch, gotID, gotEpoch, err, wantID, wantEpoch)
		}
	}
	refused := func(what string, id int64, epoch int16, want error) {
		t.Helper()
		if gotID, gotEpoch, err := s.ReinitProducer(c, id, epoch); !errors.Is(err, want) {
			t.Fatalf("%s: ReinitProducer(%d, %d) = %d, %d, %v; want %v", what, id, epoch, gotID, gotEpoch, err, want)
		}
	}
	step("bump of a fresh id", pid, 0, pid, 1)
	step("retried bump", pid, 0, pid, 1)
	step("second bump", pid, 1, pid, 2)
	refused("stale epoch", pid, 0, metadata.ErrProducerFenced)
	step("locally bumped epoch", pid, 9, pid, 10)
	refused("epoch before the local bumps", pid, 2, metadata.ErrProducerFenced)
	refused("half a pair", pid, -1, metadata.ErrInvalidProducerInit)
	refused("half a pair", -1, 3, metadata.ErrInvalidProducerInit)

	newID := func(what string, id int64, epoch int16) int64 {
		t.Helper()
		gotID, gotEpoch, err := s.ReinitProducer(c, id, epoch)
		if err != nil || gotEpoch != 0 || gotID <= pid || gotID == id {
			t.Fatalf("%s: ReinitProducer(%d, %d) = %d, %d, %v; want a new id with epoch 0", what, id, epoch, gotID, gotEpoch, err)
		}
		return gotID
	}
	q := newID("no id", -1, -1)
	r := newID("exhausted epoch", pid, metadata.ExhaustedProducerEpoch)
	u := newID("never issued", r+1000, 0)
	if q == r || r == u || q == u {
		t.Fatalf("new ids %d, %d, %d repeat", q, r, u)
	}
	step("the old id keeps its epochs", pid, 10, pid, 11)

	// Concurrent bumps of one epoch: one bumps, the others are its retries.
	var wg sync.WaitGroup
	type answer struct {
		id    int64
		epoch int16
		err   error
	}
	answers := make([]answer, 4)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, epoch, err := s.ReinitProducer(c, q, 0)
			answers[i] = answer{id, epoch, err}
		}()
	}
	wg.Wait()
	for i, a := range answers {
		if a.err != nil || a.id != q || a.epoch != 1 {
			t.Errorf("concurrent bump %d: %+v; want %d, 1", i, a, q)
		}
	}
}

// testReinitProducerSequences: after a bump the producer's sequences
// restart at 0 under the new epoch, and its old epoch is fenced in a
// partition the new one wrote.
func testReinitProducerSequences(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "reinit", 1)
	pid := producers(t, s, 1)
	wantAccepted(t, "epoch 0, seq 0", commitOne(t, s, idem(tp.ID, 0, pid, 0, 0, 3)), 0)
	wantAccepted(t, "epoch 0, seq 3", commitOne(t, s, idem(tp.ID, 0, pid, 0, 3, 2)), 3)
	id, epoch, err := s.ReinitProducer(ctx(t), pid, 0)
	if err != nil || id != pid || epoch != 1 {
		t.Fatalf("ReinitProducer(%d, 0) = %d, %d, %v", pid, id, epoch, err)
	}
	wantRefused(t, "new epoch, old sequence", commitOne(t, s, idem(tp.ID, 0, pid, 1, 5, 1)), metadata.ErrOutOfOrderSequence)
	wantAccepted(t, "new epoch, seq 0", commitOne(t, s, idem(tp.ID, 0, pid, 1, 0, 2)), 5)
	wantRefused(t, "old epoch after the new one", commitOne(t, s, idem(tp.ID, 0, pid, 0, 5, 1)), metadata.ErrProducerFenced)
	wantAccepted(t, "new epoch, next sequence", commitOne(t, s, idem(tp.ID, 0, pid, 1, 2, 1)), 7)
}

// testExpireProducerEpochs: ExpireProducerEpochs forgets the ids not
// bumped for the expiration, oldest first and at most limit per pass: a
// forgotten id's stale epoch is bumped instead of fenced, and its
// current epoch still bumps (a live producer keeps working); an id
// bumped since is kept, and after 0 forgets nothing.
func testExpireProducerEpochs(t *testing.T, s metadata.Store) {
	c := ctx(t)
	bump := func(id int64, epoch int16, want int16) {
		t.Helper()
		if gotID, got, err := s.ReinitProducer(c, id, epoch); err != nil || gotID != id || got != want {
			t.Fatalf("ReinitProducer(%d, %d) = %d, %d, %v; want %d, %d", id, epoch, gotID, got, err, id, want)
		}
	}
	expire := func(after time.Duration, limit, want int) {
		t.Helper()
		if n, err := s.ExpireProducerEpochs(c, after, limit); err != nil || n != want {
			t.Fatalf("ExpireProducerEpochs(%v, %d) = %d, %v; want %d", after, limit, n, err, want)
		}
	}
	a, b := producers(t, s, 1), producers(t, s, 1)
	bump(a, 0, 1)
	bump(a, 1, 2)
	bump(b, 0, 1)
	expire(time.Hour, 10, 0)
	expire(0, 10, 0)
	if _, _, err := s.ReinitProducer(c, a, 0); !errors.Is(err, metadata.ErrProducerFenced) {
		t.Fatalf("a's stale epoch before expiry: %v, want fenced", err)
	}
	// The expiration is long beside the calls between the last bump and
	// the pass (b's age then), the sleep longer than it (a's).
	const after = 2 * time.Second
	time.Sleep(after + 100*time.Millisecond)
	bump(b, 1, 2) // b is bumped again: it stays
	expire(after, 10, 1)
	bump(a, 0, 1) // a's state is forgotten: its old epoch bumps
	if _, _, err := s.ReinitProducer(c, b, 0); !errors.Is(err, metadata.ErrProducerFenced) {
		t.Fatalf("b's stale epoch after a's expiry: %v, want fenced", err)
	}

	// At most limit per pass, the oldest first.
	time.Sleep(after + 100*time.Millisecond)
	d := producers(t, s, 1)
	bump(d, 0, 1)
	expire(after, 1, 1)
	expire(after, 1, 1)
	expire(after, 1, 0)
	bump(b, 0, 1) // b was forgotten too: its stale epoch bumps
	bump(a, 7, 8) // a, forgotten, keeps bumping from the epoch it sends
	bump(d, 1, 2) // d, bumped after the sleep, was kept: its stale epoch is fenced
	if _, _, err := s.ReinitProducer(c, d, 0); !errors.Is(err, metadata.ErrProducerFenced) {
		t.Fatalf("d's stale epoch: %v, want fenced", err)
	}
}
