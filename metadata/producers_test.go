package metadata

import (
	"math"
	"testing"
	"time"
)

func TestDecideProducerInit(t *testing.T) {
	fresh := ProducerEpochState{Issued: true, Epoch: 0, LastEpoch: -1}
	bumped := ProducerEpochState{Issued: true, Epoch: 3, LastEpoch: 2}
	for _, tc := range []struct {
		name  string
		st    ProducerEpochState
		id    int64
		epoch int16
		want  ProducerInitDecision
	}{
		{"no id: new", ProducerEpochState{}, -1, -1, ProducerInitDecision{Action: ProducerNewID}},
		{"no id, state ignored", bumped, -1, -1, ProducerInitDecision{Action: ProducerNewID}},
		{"id without epoch", fresh, 7, -1, ProducerInitDecision{Action: ProducerInvalid}},
		{"epoch without id", fresh, -1, 0, ProducerInitDecision{Action: ProducerInvalid}},
		{"never issued: new", ProducerEpochState{}, 7, 0, ProducerInitDecision{Action: ProducerNewID}},
		{"fresh id bumped", fresh, 7, 0, ProducerInitDecision{Action: ProducerBump, Epoch: 1, LastEpoch: 0}},
		{"held epoch bumped", bumped, 7, 3, ProducerInitDecision{Action: ProducerBump, Epoch: 4, LastEpoch: 3}},
		{"retried bump kept", bumped, 7, 2, ProducerInitDecision{Action: ProducerKeep, Epoch: 3}},
		{"stale epoch fenced", bumped, 7, 1, ProducerInitDecision{Action: ProducerFenced}},
		{"oldest epoch fenced", bumped, 7, 0, ProducerInitDecision{Action: ProducerFenced}},
		{"locally bumped epoch", bumped, 7, 40, ProducerInitDecision{Action: ProducerBump, Epoch: 41, LastEpoch: 40}},
		{"last before exhausted", fresh, 7, ExhaustedProducerEpoch - 1, ProducerInitDecision{Action: ProducerBump, Epoch: ExhaustedProducerEpoch, LastEpoch: ExhaustedProducerEpoch - 1}},
		{"exhausted: new id", fresh, 7, ExhaustedProducerEpoch, ProducerInitDecision{Action: ProducerNewID}},
		{"max epoch: new id", bumped, 7, 32767, ProducerInitDecision{Action: ProducerNewID}},
		{"exhausted retry: new id", ProducerEpochState{Issued: true, Epoch: ExhaustedProducerEpoch, LastEpoch: ExhaustedProducerEpoch - 1}, 7, ExhaustedProducerEpoch, ProducerInitDecision{Action: ProducerNewID}},
	} {
		if got := DecideProducerInit(tc.st, tc.id, tc.epoch); got != tc.want {
			t.Errorf("%s: DecideProducerInit(%+v, %d, %d) = %+v, want %+v", tc.name, tc.st, tc.id, tc.epoch, got, tc.want)
		}
	}
}

func TestProducerEpochCutoff(t *testing.T) {
	const now = int64(1_800_000_000_000)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		bumpedMs int64
		nowMs    int64
		after    time.Duration
		want     bool
	}{
		{"never: after 0", 0, now, 0, false},
		{"never: negative after", 0, now, -time.Second, false},
		{"bumped just now", now, now, day, false},
		{"a millisecond short of a day", now - day.Milliseconds() + 1, now, day, false},
		{"exactly a day", now - day.Milliseconds(), now, day, true},
		{"older than a day", now - 2*day.Milliseconds(), now, day, true},
		{"bumped in the future (clock skew)", now + 1000, now, time.Second, false},
		{"under a millisecond counts as one", now - 1, now, time.Microsecond, true},
		{"under a millisecond, bumped now", now, now, time.Microsecond, false},
		{"no underflow", math.MinInt64, math.MinInt64 + 5, time.Hour, true},
	} {
		if got := ProducerEpochExpired(tc.bumpedMs, tc.nowMs, tc.after); got != tc.want {
			t.Errorf("%s: ProducerEpochExpired(%d, %d, %v) = %v, want %v", tc.name, tc.bumpedMs, tc.nowMs, tc.after, got, tc.want)
		}
		cutoff, ok := ProducerEpochCutoff(tc.nowMs, tc.after)
		if got := ok && tc.bumpedMs <= cutoff; got != tc.want {
			t.Errorf("%s: cutoff %d, %v disagrees with the rule", tc.name, cutoff, ok)
		}
	}
}
