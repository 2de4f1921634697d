package metadata

import (
	"context"
	"errors"
	"math"
	"time"
)

// ProducerInfo is an idempotent producer's state in one partition, as
// the sequencer keeps it (Kafka's DescribeProducers shows it).
type ProducerInfo struct {
	ProducerID     int64
	Epoch          int16
	LastSequence   int32 // of its last appended batch
	LastBaseOffset int64 // where its last appended batch starts
}

// ProducerStore reads producer states.
type ProducerStore interface {
	// Producers returns the producer states of a partition ordered by
	// producer id, at most limit of them (none for an unknown partition).
	Producers(ctx context.Context, topicID int64, partition int32, limit int) ([]ProducerInfo, error)
	// ReinitProducer answers InitProducerId for (id, epoch) by
	// DecideProducerInit: (-1, -1) is InitProducer; otherwise the next
	// epoch of id, the same answer for a retried bump, or a new id.
	// Errors: ErrProducerFenced, ErrInvalidProducerInit.
	ReinitProducer(ctx context.Context, id int64, epoch int16) (int64, int16, error)
	// ExpireProducerEpochs forgets at most limit producer ids whose epoch
	// was last bumped at least after ago (ProducerEpochCutoff, by the
	// store's clock), oldest first, and returns how many it forgot; after
	// <= 0 forgets none. A forgotten id holds epoch 0 again: its next
	// bump is decided as a first one (DecideProducerInit). Its cost is
	// that of the rows removed, not of the idle ones (an index on the bump
	// time).
	ExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error)
}

// Producer epochs (KIP-360). InitProducerId with a producer's id and
// epoch asks for the next epoch of that id: its sequences restart at 0 and
// its older epochs are fenced. The store keeps, per producer id that ever
// asked, the epoch it holds and the one before the last bump (so that a
// retried bump whose answer was lost gets the same answer); an id issued
// by InitProducer and never bumped holds epoch 0. DecideProducerInit is
// the rule; the backends load the state and write its outcome.

// ErrInvalidProducerInit refuses an InitProducerId that gives only one of
// a producer id and an epoch.
var ErrInvalidProducerInit = errors.New("metadata: producer id and epoch must both be given or both be -1")

// ExhaustedProducerEpoch: a producer at this epoch or above cannot be
// bumped again and gets a new id (Kafka's isEpochExhausted).
const ExhaustedProducerEpoch = math.MaxInt16 - 1

// ProducerEpochState is what the store knows of one producer id.
type ProducerEpochState struct {
	Issued    bool  // the id was handed out by InitProducer
	Epoch     int16 // the epoch it holds (0 if never bumped)
	LastEpoch int16 // the epoch before its last bump; -1 if never bumped
}

// ProducerInitAction is what a backend does for an InitProducerId.
type ProducerInitAction int

const (
	// ProducerNewID: issue a new id with epoch 0.
	ProducerNewID ProducerInitAction = iota
	// ProducerBump: store Epoch and LastEpoch for the id, answer (id, Epoch).
	ProducerBump
	// ProducerKeep: a retried bump; answer (id, Epoch), store nothing.
	ProducerKeep
	// ProducerFenced: a stale epoch; answer ErrProducerFenced.
	ProducerFenced
	// ProducerInvalid: answer ErrInvalidProducerInit.
	ProducerInvalid
)

// ProducerInitDecision is DecideProducerInit's outcome.
type ProducerInitDecision struct {
	Action    ProducerInitAction
	Epoch     int16 // for ProducerBump and ProducerKeep
	LastEpoch int16 // for ProducerBump
}

// DecideProducerInit decides an InitProducerId for (id, epoch) given the
// id's stored state (ignored when id < 0):
//   - (-1, -1): a new id;
//   - only one of them negative: invalid;
//   - an id never issued, or an epoch at or above ExhaustedProducerEpoch:
//     a new id (Apache Kafka gives idempotent producers new ids too);
//   - the epoch before the last bump: a retry of that bump, same answer;
//   - an epoch below the held one: fenced;
//   - the held epoch or above: bump to epoch+1. Above is allowed because
//     idempotent clients (franz-go, the Java client) bump their epoch
//     locally after a produce error and ask the broker only when the epoch
//     is exhausted.
func DecideProducerInit(st ProducerEpochState, id int64, epoch int16) ProducerInitDecision {
	switch {
	case id < 0 && epoch < 0:
		return ProducerInitDecision{Action: ProducerNewID}
	case id < 0 || epoch < 0:
		return ProducerInitDecision{Action: ProducerInvalid}
	case !st.Issued || epoch >= ExhaustedProducerEpoch:
		return ProducerInitDecision{Action: ProducerNewID}
	case st.LastEpoch >= 0 && epoch == st.LastEpoch:
		return ProducerInitDecision{Action: ProducerKeep, Epoch: st.Epoch}
	case epoch < st.Epoch:
		return ProducerInitDecision{Action: ProducerFenced}
	}
	return ProducerInitDecision{Action: ProducerBump, Epoch: epoch + 1, LastEpoch: epoch}
}

// Err is the error a refusing decision answers with; nil for the others.
func (d ProducerInitDecision) Err() error {
	switch d.Action {
	case ProducerFenced:
		return ErrProducerFenced
	case ProducerInvalid:
		return ErrInvalidProducerInit
	}
	return nil
}

// Producer epoch expiry, like Apache Kafka's producer.id.expiration.ms:
// the state of a producer id not bumped for the expiration is forgotten,
// so that producer_epochs holds the recently bumped ids only. What is
// lost is the fencing of the id's older epochs by InitProducerId and the
// same answer to a retried bump; an id whose producer comes back is
// bumped from the epoch it sends, so a live producer keeps working.

// ProducerEpochCutoff is the expiry rule: with the store's clock at
// nowMs (unix ms), a producer id last bumped at or before cutoffMs is
// expired; ok is false when nothing expires (after <= 0). Backends
// delete the rows whose bump time is <= cutoffMs.
func ProducerEpochCutoff(nowMs int64, after time.Duration) (cutoffMs int64, ok bool) {
	if after <= 0 {
		return 0, false
	}
	ms := after.Milliseconds()
	if ms == 0 {
		ms = 1 // under a millisecond: at least one
	}
	if nowMs < math.MinInt64+ms {
		return math.MinInt64, true
	}
	return nowMs - ms, true
}

// ProducerEpochExpired is whether a producer id last bumped at bumpedMs
// is expired at nowMs (ProducerEpochCutoff).
func ProducerEpochExpired(bumpedMs, nowMs int64, after time.Duration) bool {
	cutoff, ok := ProducerEpochCutoff(nowMs, after)
	return ok && bumpedMs <= cutoff
}
