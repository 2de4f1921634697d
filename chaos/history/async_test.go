package history

import "testing"

const killed = "pg-failover"

// timed sets a send's Start and the op's Time.
func timed(op Op, start, at int64) Op {
	op.Start, op.Time = start, at
	return op
}

// asyncLossHistory is a run whose primary was killed at time 10 with two
// acknowledged values (b, c at offsets 1, 2) and one of unknown outcome
// (u at 3) not yet on the standby: the fetcher and the member had read
// them; the new primary wrote d, e, f at offsets 1-3, behind their
// positions. Its after-effects: the fetcher's and the member's skips over
// 1-2, the group's offsets 1-2 unconsumed.
func asyncLossHistory() []Op {
	return []Op{
		timed(send("a", 0, OK, 0), 1, 2), timed(send("b", 0, OK, 1), 3, 4), timed(send("c", 0, OK, 2), 5, 6),
		timed(send("u", 0, Unknown, 0), 7, 8),
		read("fetch", 0, 0, "a"), read("fetch", 0, 1, "b"), read("fetch", 0, 2, "c"), read("fetch", 0, 3, "u"),
		assign("m1", 0), gread("m1", 0, 0, "a"), gread("m1", 0, 1, "b"), gread("m1", 0, 2, "c"), commit("m1", 0, 3),
		{Type: Fault, Value: killed, Time: 10},
		timed(send("d", 0, OK, 1), 11, 12), timed(send("e", 0, OK, 2), 13, 14), timed(send("f", 0, OK, 3), 15, 16),
	}
}

func withTail(ops []Op, tail ...Op) []Op {
	return append(append(append([]Op(nil), ops...), tail...),
		finalRead(0, 0, "a"), finalRead(0, 1, "d"), finalRead(0, 2, "e"), finalRead(0, 3, "f"), final(0, 0, 4),
		Op{Type: GroupEnd, Group: "g", Topic: topic, Partition: 0, Offset: 4},
		Op{Type: Table, Topic: topic, Partition: 0, Offset: 0, Key: "ka", Value: "a"},
		Op{Type: TableWatermark, Topic: topic, Partition: 0, Offset: 1})
}

// accounted is the loss and its after-effects only.
func accounted() []Op {
	return withTail(asyncLossHistory(), read("fetch", 0, 3, "f"), gread("m1", 0, 3, "f"), commit("m1", 0, 4))
}

// TestCheckAsyncLossAccounted: the lost values are counted with their
// window, the two skips and the group's two unconsumed offsets are
// classified as their after-effects, and the run is valid; Check flags
// the history.
func TestCheckAsyncLossAccounted(t *testing.T) {
	r := CheckAsyncLoss(accounted(), killed)
	if !r.Valid() {
		t.Fatalf("anomalies %v: %v", r.Anomalies, r.Examples)
	}
	l := r.AsyncLoss
	if l.Lost != 2 || l.LostRead != 1 || l.Window != 6 {
		t.Fatalf("loss %+v, want 2 acknowledged and 1 read lost over 6ns", l)
	}
	if l.AfterEffects[Skip] != 2 || l.AfterEffects[GroupUnconsumed] != 2 || len(l.AfterEffects) != 2 {
		t.Fatalf("after-effects %v, want skip 2 (the fetcher's, the member's) and group-unconsumed 2", l.AfterEffects)
	}
	if r.Ops != len(accounted()) {
		t.Fatalf("ops %d, want the whole history's %d", r.Ops, len(accounted()))
	}
	if plain := Check(accounted()); plain.Anomalies[InconsistentOffset] != 3 {
		t.Errorf("Check: anomalies %v, want the 3 offsets the new primary wrote again", plain.Anomalies)
	}
	if r := CheckAsyncLoss(accounted(), "another-fault"); r.Valid() || r.AsyncLoss.Lost != 0 {
		t.Fatalf("without the kill: loss %+v, anomalies %v", r.AsyncLoss, r.Anomalies)
	}
}

// TestCheckAsyncLossFlagsTheRest: the same history with one more anomaly
// that does not follow from the loss is flagged with exactly that kind
// (and the loss is still measured).
func TestCheckAsyncLossFlagsTheRest(t *testing.T) {
	base := asyncLossHistory()
	tail := []Op{read("fetch", 0, 3, "f"), gread("m1", 0, 3, "f"), commit("m1", 0, 4)}
	cases := []struct {
		name string
		kind string
		ops  []Op
		lost int // the acknowledged sends lost with the primary
	}{
		{"a send handed to the client after the kill, acknowledged, lost", Unseen,
			withTail(base, append(tail, timed(send("g", 0, OK, 4), 17, 18))...), 2},
		{"a send after the kill acknowledged and lost below a later read", Lost,
			withTail(base, append(tail, timed(send("h", 0, OK, 4), 17, 18), timed(send("i", 0, OK, 5), 19, 20),
				read("sub", 0, 5, "i"))...), 2},
		{"a skip over offsets the reader never read lost values at", Skip,
			withTail(base, append(tail, read("sub", 0, 0, "a"), read("sub", 0, 3, "f"))...), 2},
		{"unconsumed offsets no member of that group read a lost value at", GroupUnconsumed,
			withTail(base, append(tail, Op{Type: Assign, Process: "n1", Group: "h", Member: "n1", Topic: topic, Partitions: []int32{0}},
				Op{Type: Read, Process: "n1", Group: "h", Member: "n1", Topic: topic, Partition: 0, Offset: 0, Value: "a"},
				Op{Type: Assign, Process: "n1", Group: "h", Member: "n1", Topic: topic, Partitions: []int32{0}},
				Op{Type: Read, Process: "n1", Group: "h", Member: "n1", Topic: topic, Partition: 0, Offset: 3, Value: "f"},
				Op{Type: GroupEnd, Group: "h", Topic: topic, Partition: 0, Offset: 4})...), 2},
		{"two values at one offset, neither lost", InconsistentOffset,
			withTail(base, append(tail, timed(send("z", 0, Unknown, 0), 19, 20), read("fetch2", 0, 3, "z"))...), 2},
		{"a table row of a value the log lost: not lost, two values at its offset", InconsistentOffset,
			withTail(base, append(tail, Op{Type: Table, Topic: topic, Partition: 0, Offset: 1, Key: "kb", Value: "b"})...), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CheckAsyncLoss(c.ops, killed)
			if r.Anomalies[c.kind] == 0 {
				t.Fatalf("not flagged: anomalies %v", r.Anomalies)
			}
			for kind := range r.Anomalies {
				if kind != c.kind {
					t.Errorf("also flagged %s: %v", kind, r.Examples)
				}
			}
			if r.AsyncLoss.Lost != c.lost {
				t.Errorf("loss %+v, want %d acknowledged sends", r.AsyncLoss, c.lost)
			}
		})
	}
}

// TestCheckAsyncLossTrimmed: a value acknowledged before the kill that
// retention deleted from the log (below the final read's log start) and
// the table holds was not lost with the primary.
func TestCheckAsyncLossTrimmed(t *testing.T) {
	ops := []Op{
		timed(send("a", 0, OK, 0), 1, 2), timed(send("b", 0, OK, 1), 3, 4), timed(send("c", 0, OK, 2), 5, 6),
		{Type: Fault, Value: killed, Time: 10},
		timed(send("d", 0, OK, 2), 11, 12),
		finalRead(0, 1, "b"), finalRead(0, 2, "d"), final(0, 1, 3),
		{Type: Table, Topic: topic, Partition: 0, Offset: 0, Key: "ka", Value: "a"},
		{Type: Table, Topic: topic, Partition: 0, Offset: 1, Key: "kb", Value: "b"},
		{Type: TableWatermark, Topic: topic, Partition: 0, Offset: 2},
	}
	r := CheckAsyncLoss(ops, killed)
	if !r.Valid() || r.AsyncLoss.Lost != 1 || r.Trimmed["unread"] != 1 {
		t.Fatalf("anomalies %v, loss %+v, trimmed %v: want c lost, a trimmed", r.Anomalies, r.AsyncLoss, r.Trimmed)
	}
}

// commitLostHistory: m1 read a (offset 0, replicated before the kill)
// and committed past it at time 5; the kill at 10 lost that commit with
// the primary (asynchronous replication), so m2, given the partition
// after the promotion, starts again at the group's older position and
// reads a again at time 12; then m2 loses the partition (revoked) and m1
// gets it back. tail is what follows.
func commitLostHistory(tail ...Op) []Op {
	at := func(op Op, t int64) Op { op.Time = t; return op }
	ops := []Op{
		timed(send("a", 0, OK, 0), 1, 2),
		at(assign("m1", 0), 3), at(assign("m2"), 3), at(gread("m1", 0, 0, "a"), 4), at(commit("m1", 0, 1), 5),
		{Type: Fault, Value: killed, Time: 10},
		at(assign("m1"), 11), at(assign("m2", 0), 11), at(gread("m2", 0, 0, "a"), 12),
	}
	ops = append(ops, tail...)
	return append(ops, at(assign("m2"), 20), at(assign("m1", 0), 20), at(commit("m1", 0, 1), 21),
		finalRead(0, 0, "a"), final(0, 0, 1), Op{Type: GroupEnd, Group: "g", Topic: topic, Partition: 0, Offset: 1},
		Op{Type: Table, Topic: topic, Partition: 0, Offset: 0, Key: "ka", Value: "a"},
		Op{Type: TableWatermark, Topic: topic, Partition: 0, Offset: 1})
}

// TestCheckAsyncLossCommitLost: a record delivered again after the
// promotion because the commit past it, acknowledged before the kill, was
// lost with the primary is an after-effect of the loss
// (group-committed-redelivery), neither a zombie delivery nor an anomaly;
// the same redelivery over a commit made after the kill (durable on the
// new primary) is still counted as Check counts it.
func TestCheckAsyncLossCommitLost(t *testing.T) {
	r := CheckAsyncLoss(commitLostHistory(), killed)
	if !r.Valid() {
		t.Fatalf("anomalies %v: %v", r.Anomalies, r.Examples)
	}
	if r.AsyncLoss.AfterEffects[GroupCommittedRedelivery] != 1 || r.StaleDeliveries != 0 || r.Redelivered != 0 {
		t.Fatalf("after-effects %v, zombie deliveries %d, redelivered %d: want 1 group-committed-redelivery after-effect only",
			r.AsyncLoss.AfterEffects, r.StaleDeliveries, r.Redelivered)
	}
	// Check, without the loss, counts m2 (a stale owner) as a zombie.
	if plain := Check(commitLostHistory()); plain.StaleDeliveries != 1 || !plain.Valid() {
		t.Fatalf("Check: zombie deliveries %d, anomalies %v", plain.StaleDeliveries, plain.Anomalies)
	}
	// m1 committed past a again after the kill: the new primary has that
	// commit, so a third delivery (m3, owning the partition) is flagged.
	late := commitLostHistory(Op{Type: Commit, Group: "g", Member: "m1", Topic: topic, Partition: 0, Offset: 1, Time: 13},
		Op{Type: Assign, Process: "m3", Group: "g", Member: "m3", Topic: topic, Partitions: []int32{0}, Time: 14},
		Op{Type: Read, Process: "m3", Group: "g", Member: "m3", Topic: topic, Partition: 0, Offset: 0, Value: "a", Time: 15})
	if r := CheckAsyncLoss(late, killed); r.Anomalies[GroupCommittedRedelivery] != 1 {
		t.Fatalf("a redelivery past a commit made after the kill: anomalies %v, after-effects %v", r.Anomalies, r.AsyncLoss.AfterEffects)
	}
}
