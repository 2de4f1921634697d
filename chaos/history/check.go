package history

import (
	"fmt"
	"sort"
)

// The anomalies Check reports (Anomaly.Kind).
const (
	// InconsistentOffset: two values at one offset.
	InconsistentOffset = "inconsistent-offset"
	// Duplicate: one value at two offsets.
	Duplicate = "duplicate"
	// Lost: an acknowledged value below the highest offset read in its
	// partition that no reader ever saw.
	Lost = "lost"
	// Unseen: an acknowledged value not seen although the partition was
	// read completely at the end (a final read).
	Unseen = "unseen"
	// ReadFailed: a read of a value whose send definitely failed.
	ReadFailed = "read-failed"
	// Phantom: a read of a value never sent.
	Phantom = "phantom"
	// NonMonotonic: a reader read an offset at or below one it read
	// before in the same partition.
	NonMonotonic = "non-monotonic"
	// Skip: a reader jumped over offsets the log holds.
	Skip = "skip"
	// Hole: an offset below the high watermark that the final read did
	// not get.
	Hole = "hole"
	// GroupUnconsumed: an offset below a group's final position that no
	// member of the group read.
	GroupUnconsumed = "group-unconsumed"
	// GroupConcurrent: one record delivered to two members that both
	// owned its partition at the time.
	GroupConcurrent = "group-concurrent"
	// GroupCommittedRedelivery: a record delivered again to a member after
	// the member that read it first had committed past it.
	GroupCommittedRedelivery = "group-committed-redelivery"
	// TableMissing, TableDuplicate, TableMismatch: an offset below the
	// table's watermark absent from the table, present more than once, or
	// with a key or value other than produced.
	TableMissing   = "table-missing"
	TableDuplicate = "table-duplicate"
	TableMismatch  = "table-mismatch"
)

// Anomaly is one violation found by Check.
type Anomaly struct {
	Kind      string `json:"kind"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

func (a Anomaly) String() string {
	s := fmt.Sprintf("%s %s/%d@%d", a.Kind, a.Topic, a.Partition, a.Offset)
	if a.Value != "" {
		s += " value " + a.Value
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	return s
}

// Report is Check's verdict over a history.
type Report struct {
	Ops   int            `json:"ops"`
	Sends map[string]int `json:"sends"` // by outcome
	Reads int            `json:"reads"`
	// TableRows counts the rows of the table scans.
	TableRows int `json:"table_rows"`
	// Redelivered counts records delivered to a second group member within
	// the first one's uncommitted window (allowed: at least once).
	Redelivered int `json:"redelivered"`
	// StaleDeliveries counts records delivered to a member that had lost
	// its partition without knowing yet (a zombie: its session expired
	// while it was paused) after the new owner committed past them.
	StaleDeliveries int            `json:"stale_deliveries"`
	Faults          map[string]int `json:"faults"`
	Anomalies       map[string]int `json:"anomalies"`
	// Trimmed counts, by kind, what retention deleted before a reader got
	// to it, allowed when the final read's log start is past it (the
	// retention invariants of the driver judge when it was deleted, the
	// table check that the table holds it): "unread" acknowledged values
	// no reader read, "skip" a reader's skips, "group-unconsumed" a
	// group's offsets no member read.
	Trimmed map[string]int `json:"trimmed,omitempty"`
	// AsyncLoss, from CheckAsyncLoss, is what a promotion of an
	// asynchronous standby lost and what followed from it (nil: Check).
	AsyncLoss *AsyncLoss `json:"async_loss,omitempty"`
	// Examples holds the first MaxExamples anomalies of each kind.
	Examples []Anomaly `json:"examples"`
}

// MaxExamples bounds Report.Examples per kind.
const MaxExamples = 20

// Valid reports whether the history shows no anomaly.
func (r *Report) Valid() bool { return len(r.Anomalies) == 0 }

func (r *Report) flag(a Anomaly) {
	r.Anomalies[a.Kind]++
	if r.Anomalies[a.Kind] <= MaxExamples {
		r.Examples = append(r.Examples, a)
	}
}

type tp struct {
	topic string
	p     int32
}

// partitionState is what the history says about one partition.
type partitionState struct {
	offsetValues map[int64]map[string]bool // from acknowledged sends and reads
	valueOffsets map[string]map[int64]bool
	acked        map[string]int64  // value -> offset of an ok send
	keys         map[string]string // value -> key it was sent with
	read         map[string]bool   // values read (not from the table)
	maxRead      int64             // highest offset read, -1: none
	final        *Op
	finalRead    map[int64]bool
	tableRows    map[int64][]Op
	tableWM      *Op
}

// trimmed reports whether offset o is below the log start the final read
// found: deleted by retention.
func (s *partitionState) trimmed(o int64) bool { return s != nil && s.final != nil && o < s.final.From }

func newPartitionState() *partitionState {
	return &partitionState{offsetValues: map[int64]map[string]bool{}, valueOffsets: map[string]map[int64]bool{},
		acked: map[string]int64{}, keys: map[string]string{}, read: map[string]bool{}, maxRead: -1, finalRead: map[int64]bool{},
		tableRows: map[int64][]Op{}}
}

func (s *partitionState) observe(offset int64, value string) {
	if s.offsetValues[offset] == nil {
		s.offsetValues[offset] = map[string]bool{}
	}
	s.offsetValues[offset][value] = true
	if s.valueOffsets[value] == nil {
		s.valueOffsets[value] = map[int64]bool{}
	}
	s.valueOffsets[value][offset] = true
}

// Check checks a history. Values are unique in a run: a value names one
// send.
func Check(ops []Op) *Report { return check(ops, nil) }

// check is Check, classifying the after-effects ex excuses (nil: none).
func check(ops []Op, ex *excuses) *Report {
	r := &Report{Ops: len(ops), Sends: map[string]int{}, Faults: map[string]int{}, Anomalies: map[string]int{}, Trimmed: map[string]int{}}
	parts := map[tp]*partitionState{}
	state := func(k tp) *partitionState {
		s := parts[k]
		if s == nil {
			s = newPartitionState()
			parts[k] = s
		}
		return s
	}
	outcome := map[string]string{} // value -> best outcome of its sends
	rank := map[string]int{Failed: 0, Unknown: 1, OK: 2}
	for i := range ops {
		op := &ops[i]
		k := tp{op.Topic, op.Partition}
		switch op.Type {
		case Send:
			r.Sends[op.Outcome]++
			if prev, ok := outcome[op.Value]; !ok || rank[op.Outcome] > rank[prev] {
				outcome[op.Value] = op.Outcome
			}
			s := state(k)
			s.keys[op.Value] = op.Key
			if op.Outcome == OK {
				s.acked[op.Value] = op.Offset
				s.observe(op.Offset, op.Value)
			}
		case Read:
			r.Reads++
			s := state(k)
			s.observe(op.Offset, op.Value)
			s.read[op.Value] = true
			s.maxRead = max(s.maxRead, op.Offset)
			if op.Final {
				s.finalRead[op.Offset] = true
			}
		case FinalRead:
			state(k).final = op
		case Table:
			r.TableRows++
			s := state(k)
			s.tableRows[op.Offset] = append(s.tableRows[op.Offset], *op)
		case TableWatermark:
			state(k).tableWM = op
		case Fault:
			r.Faults[op.Value]++
		}
	}
	keys := make([]tp, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].p < keys[j].p
	})
	for _, k := range keys {
		checkPartition(r, k, parts[k])
	}
	checkReads(r, ops, parts, outcome, ex)
	checkGroups(r, ops, parts, ex)
	return r
}

// checkPartition flags what one partition's log shows: inconsistent
// offsets, duplicates, lost and unseen writes, holes, and the table.
func checkPartition(r *Report, k tp, s *partitionState) {
	for _, o := range sortedOffsets(s.offsetValues) {
		if vs := s.offsetValues[o]; len(vs) > 1 {
			r.flag(Anomaly{Kind: InconsistentOffset, Topic: k.topic, Partition: k.p, Offset: o,
				Detail: fmt.Sprintf("values %v", sortedKeys(vs))})
		}
	}
	for _, v := range sortedKeys(s.valueOffsets) {
		if os := s.valueOffsets[v]; len(os) > 1 {
			offs := sortedOffsets(os)
			r.flag(Anomaly{Kind: Duplicate, Topic: k.topic, Partition: k.p, Offset: offs[0], Value: v,
				Detail: fmt.Sprintf("at offsets %v", offs)})
		}
	}
	for _, v := range sortedKeys(s.acked) {
		o := s.acked[v]
		if s.read[v] {
			continue
		}
		switch {
		case s.trimmed(o):
			r.Trimmed["unread"]++
		case o < s.maxRead:
			r.flag(Anomaly{Kind: Lost, Topic: k.topic, Partition: k.p, Offset: o, Value: v,
				Detail: fmt.Sprintf("acknowledged, never read, offset %d was read", s.maxRead)})
		case s.final != nil:
			r.flag(Anomaly{Kind: Unseen, Topic: k.topic, Partition: k.p, Offset: o, Value: v,
				Detail: fmt.Sprintf("acknowledged, not in the final read up to %d", s.final.Offset)})
		}
	}
	if f := s.final; f != nil {
		for o := f.From; o < f.Offset; o++ {
			if !s.finalRead[o] {
				r.flag(Anomaly{Kind: Hole, Topic: k.topic, Partition: k.p, Offset: o,
					Detail: fmt.Sprintf("not in the final read of [%d, %d)", f.From, f.Offset)})
			}
		}
	}
	if wm := s.tableWM; wm != nil {
		for o := wm.From; o < wm.Offset; o++ {
			switch rows := s.tableRows[o]; len(rows) {
			case 0:
				r.flag(Anomaly{Kind: TableMissing, Topic: k.topic, Partition: k.p, Offset: o,
					Detail: fmt.Sprintf("below the table watermark %d", wm.Offset)})
			case 1:
			default:
				r.flag(Anomaly{Kind: TableDuplicate, Topic: k.topic, Partition: k.p, Offset: o,
					Detail: fmt.Sprintf("%d rows", len(rows))})
			}
		}
	}
	for _, o := range sortedOffsets(s.tableRows) {
		for _, row := range s.tableRows[o] {
			if vs := s.offsetValues[o]; len(vs) > 0 && !vs[row.Value] {
				r.flag(Anomaly{Kind: TableMismatch, Topic: k.topic, Partition: k.p, Offset: o, Value: row.Value,
					Detail: fmt.Sprintf("the log holds %v", sortedKeys(vs))})
			} else if key, ok := s.keys[row.Value]; ok && key != row.Key {
				r.flag(Anomaly{Kind: TableMismatch, Topic: k.topic, Partition: k.p, Offset: o, Value: row.Value,
					Detail: fmt.Sprintf("key %q, produced %q", row.Key, key)})
			}
		}
	}
}

// checkReads flags reads of failed or unknown values and each reader's
// order: non-monotonic reads and skips. A reader's position is reset by
// its member's Assign.
func checkReads(r *Report, ops []Op, parts map[tp]*partitionState, outcome map[string]string, ex *excuses) {
	last := map[readerPartition]int64{}
	for i := range ops {
		op := &ops[i]
		k := tp{op.Topic, op.Partition}
		switch op.Type {
		case Assign:
			for c := range last {
				if c.process == op.Process {
					delete(last, c)
				}
			}
		case Read:
			switch out, ok := outcome[op.Value]; {
			case !ok:
				r.flag(Anomaly{Kind: Phantom, Topic: k.topic, Partition: k.p, Offset: op.Offset, Value: op.Value,
					Detail: "read by " + op.Process + ", never sent"})
			case out == Failed:
				r.flag(Anomaly{Kind: ReadFailed, Topic: k.topic, Partition: k.p, Offset: op.Offset, Value: op.Value,
					Detail: "read by " + op.Process + ", its send failed"})
			}
			c := readerPartition{op.Process, k}
			prev, seen := last[c]
			last[c] = op.Offset
			if !seen {
				continue
			}
			if op.Offset <= prev {
				r.flag(Anomaly{Kind: NonMonotonic, Topic: k.topic, Partition: k.p, Offset: op.Offset, Value: op.Value,
					Detail: fmt.Sprintf("%s read %d after %d", op.Process, op.Offset, prev)})
				continue
			}
			s := parts[k]
			var held []int64
			for o := prev + 1; o < op.Offset; o++ {
				if len(s.offsetValues[o]) > 0 {
					held = append(held, o)
				}
			}
			switch {
			case len(held) == 0:
			case s.trimmed(held[len(held)-1]):
				r.Trimmed[Skip]++
			case !ex.skip(c, held):
				r.flag(Anomaly{Kind: Skip, Topic: k.topic, Partition: k.p, Offset: held[0],
					Detail: fmt.Sprintf("%s read %d then %d", op.Process, prev, op.Offset)})
			}
		}
	}
}

func sortedOffsets[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for o := range m {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
