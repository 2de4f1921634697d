package history

import "time"

// AsyncLoss is what the promotion of an asynchronous standby lost, and
// what followed from exactly those losses. Asynchronous replication allows
// the loss (a commit is acknowledged before the standby has it); it is
// measured, not flagged. CheckAsyncLoss fills it.
type AsyncLoss struct {
	// Lost counts the acknowledged sends lost: sent before the primary was
	// killed, neither in the final read nor in the table.
	Lost int `json:"lost"`
	// LostRead counts the other sends (outcome unknown) lost the same way
	// whose values a reader had been handed.
	LostRead int `json:"lost_read"`
	// Window spans the acknowledged ones: from the acknowledgement of the
	// first of them to the kill (0 when none was lost).
	Window time.Duration `json:"window"`
	// AfterEffects counts, by anomaly kind, what would otherwise be
	// flagged and follows from those losses alone: a reader's skip over
	// offsets at each of which it had read a lost value (the new primary
	// wrote other values there, behind the reader's position), and a
	// group's offsets below its position that no member read, at each of
	// which a member had read a lost value; and a record delivered again
	// after the kill to a member of a group whose earlier reader had
	// committed past it only before the kill (group-committed-redelivery):
	// the commit, acknowledged by the old primary, was lost with it, and
	// the group went on from its older position.
	AfterEffects map[string]int `json:"after_effects"`
}

// readerPartition is one reader's cursor in one partition.
type readerPartition struct {
	process string
	k       tp
}

// excuses are the offsets at which readers and groups read values the
// promotion lost: the after-effects a check may classify instead of flag.
type excuses struct {
	reader map[readerPartition]map[int64]bool
	group  map[groupPartition]map[int64]bool
	loss   *AsyncLoss
	// killedAt is the kill's time: commits acknowledged before it may be
	// lost, those after it are the new primary's.
	killedAt int64
}

// skip reports whether a reader's skip over held offsets follows from the
// loss (each of them is one where the reader read a lost value), counting
// it.
func (e *excuses) skip(c readerPartition, held []int64) bool {
	if e == nil || len(held) == 0 {
		return false
	}
	for _, o := range held {
		if !e.reader[c][o] {
			return false
		}
	}
	e.loss.AfterEffects[Skip]++
	return true
}

// unconsumed reports whether a group's unconsumed offset follows from the
// loss, counting it.
func (e *excuses) unconsumed(g groupPartition, o int64) bool {
	if e == nil || !e.group[g][o] {
		return false
	}
	e.loss.AfterEffects[GroupUnconsumed]++
	return true
}

// lostCommit reports whether read, a group's delivery of an offset an
// earlier reader had committed past, follows from that commit being lost
// with the primary, counting it: read came after the kill, and the
// earlier reader's commits made after the kill (durable on the new
// primary) stayed at or below the offset, so every commit past it was
// acknowledged by the old primary before the kill.
func (e *excuses) lostCommit(read *Op, committedAfterKill int64) bool {
	if e == nil || read.Time <= e.killedAt || committedAfterKill > read.Offset {
		return false
	}
	e.loss.AfterEffects[GroupCommittedRedelivery]++
	return true
}

// CheckAsyncLoss checks a history whose PostgreSQL primary was killed (a
// Fault op of kind killed, whose Time is the kill) and an asynchronous
// standby promoted. A value is lost with the primary when its send was
// handed to the client before the kill (Start), it was acknowledged or
// read, and neither the final read nor the table scan saw it (retention
// may have deleted it from the log, never from the table): the old
// primary may have committed it, and the standby not have it. The lost sends are counted
// (Report.AsyncLoss) and left out of the history with every read of their
// values; the offsets at which each reader and each group read a lost
// value excuse exactly the skips and unconsumed offsets over them, and a
// group's redelivery after the kill of what was committed only before it
// excuses that redelivery (excuses.lostCommit).
// Everything else is checked as Check does: a send handed to the client
// after the kill and lost, two values at one offset, any other skip, a
// table row of a lost value.
func CheckAsyncLoss(ops []Op, killed string) *Report {
	var at int64
	final := map[string]bool{}
	for _, op := range ops {
		switch {
		case op.Type == Fault && op.Value == killed && at == 0:
			at = op.Time
		case op.Type == Read && op.Final, op.Type == Table:
			final[op.Value] = true // kept: the final read or the table has it
		}
	}
	loss := &AsyncLoss{AfterEffects: map[string]int{}}
	if at == 0 {
		r := check(ops, nil)
		r.AsyncLoss = loss
		return r
	}
	lost := map[string]bool{}
	acked, read := map[string]bool{}, map[string]bool{}
	first := at
	for _, op := range ops {
		switch {
		case op.Type == Send && op.Start < at && !final[op.Value] && op.Outcome != Failed:
			lost[op.Value] = true
			if op.Outcome == OK && !acked[op.Value] {
				acked[op.Value] = true
				first = min(first, op.Time)
			}
		case op.Type == Read && !op.Final:
			read[op.Value] = true
		}
	}
	for v := range lost {
		switch {
		case acked[v]:
			loss.Lost++
		case read[v]:
			loss.LostRead++
		}
	}
	if loss.Lost > 0 {
		loss.Window = time.Duration(at - first)
	}
	ex := &excuses{reader: map[readerPartition]map[int64]bool{}, group: map[groupPartition]map[int64]bool{}, loss: loss, killedAt: at}
	mark := func(m map[int64]bool, o int64) map[int64]bool {
		if m == nil {
			m = map[int64]bool{}
		}
		m[o] = true
		return m
	}
	kept := make([]Op, 0, len(ops))
	for _, op := range ops {
		if (op.Type == Send || op.Type == Read) && lost[op.Value] {
			if op.Type == Read {
				k := tp{op.Topic, op.Partition}
				c := readerPartition{op.Process, k}
				ex.reader[c] = mark(ex.reader[c], op.Offset)
				if op.Group != "" {
					g := groupPartition{op.Group, k}
					ex.group[g] = mark(ex.group[g], op.Offset)
				}
			}
			continue
		}
		kept = append(kept, op)
	}
	r := check(kept, ex)
	r.Ops = len(ops)
	r.AsyncLoss = loss
	return r
}
