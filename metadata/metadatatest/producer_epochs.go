package metadatatest

import (
	"errors"
	"sync"
	"testing"

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
