package metadata

import "testing"

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
