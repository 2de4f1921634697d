package sqlite

import (
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

// dedupeWindow is how many of a producer's last batches per partition are
// remembered for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN).
const dedupeWindow = 5

// seqEntry is one remembered batch: [base sequence, last sequence, base offset].
type seqEntry [3]int64

// producerState is an idempotent producer's state in one partition.
type producerState struct {
	known   bool // false: no state yet
	epoch   int16
	entries []seqEntry // oldest first, at most dedupeWindow
	dirty   bool       // changed by this commit
}

// verdict is the outcome of checking one batch.
type verdict struct {
	accept    bool
	duplicate bool
	dupOffset int64
	err       error
}

// check decides b against the state, following the rules every backend
// shares: a lower epoch is fenced; a higher one must start at sequence 0;
// in the same epoch the next sequence is accepted, a retry of a
// remembered batch still in the log (base offset >= logStart) is a
// duplicate, anything else is out of order; with no state the producer must
// start at sequence 0.
func (st *producerState) check(b metadata.BatchCommit, logStart int64) verdict {
	last := validate.LastSequence(b.BaseSequence, b.RecordCount)
	switch {
	case !st.known:
		if b.BaseSequence != 0 {
			return verdict{err: metadata.ErrOutOfOrderSequence}
		}
		return verdict{accept: true}
	case b.ProducerEpoch < st.epoch:
		return verdict{err: metadata.ErrProducerFenced}
	case b.ProducerEpoch > st.epoch:
		if b.BaseSequence != 0 {
			return verdict{err: metadata.ErrOutOfOrderSequence}
		}
		return verdict{accept: true}
	}
	if len(st.entries) > 0 && b.BaseSequence == validate.NextSequence(int32(st.entries[len(st.entries)-1][1])) {
		return verdict{accept: true}
	}
	for i := len(st.entries) - 1; i >= 0; i-- {
		e := st.entries[i]
		if e[0] == int64(b.BaseSequence) && e[1] == int64(last) && e[2] >= logStart {
			return verdict{duplicate: true, dupOffset: e[2]}
		}
	}
	return verdict{err: metadata.ErrOutOfOrderSequence}
}

// accept records b, committed at baseOffset.
func (st *producerState) accept(b metadata.BatchCommit, baseOffset int64) {
	if !st.known || b.ProducerEpoch != st.epoch {
		st.entries = st.entries[:0]
	}
	st.known, st.epoch, st.dirty = true, b.ProducerEpoch, true
	st.entries = append(st.entries, seqEntry{int64(b.BaseSequence), int64(validate.LastSequence(b.BaseSequence, b.RecordCount)), baseOffset})
	if len(st.entries) > dedupeWindow {
		st.entries = append(st.entries[:0], st.entries[len(st.entries)-dedupeWindow:]...)
	}
}
