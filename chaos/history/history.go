// Package history is the record of a chaos run — every send, read, group
// event and final read, in the order they happened — and its checker
// (Check), modelled on the queue checker of Jepsen's Kafka workload.
//
// A history is written as JSON lines, one Op per line, so that a failing
// run can be checked again (floe-chaos check FILE). docs/chaos.md
// describes every field.
package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The kinds of operation (Op.Type).
const (
	// Send is a produce of one value to one partition. Outcome says what
	// the producer heard; Offset is the assigned offset when ok.
	Send = "send"
	// Read is one record seen by a reader (Process): a fetcher, a
	// subscriber, a group member (Group and Member set), the final reader
	// (Final) or a table scan (see Table).
	Read = "read"
	// Assign is a group member's new assignment (Partitions), as the
	// member learnt it.
	Assign = "assign"
	// Commit is a group member's committed position (Offset: the next
	// offset to read) of one partition.
	Commit = "commit"
	// MemberEnd is a member leaving: closed, aborted (a crash) or fenced.
	MemberEnd = "member-end"
	// FinalRead marks a partition read completely by the final reader:
	// every offset in [From, Offset) was read (Offset: the high
	// watermark).
	FinalRead = "final"
	// GroupEnd is a group's committed position (Offset) of a partition
	// after its members drained it; From is where the group started.
	GroupEnd = "group-end"
	// Table is a row of the topic's Iceberg table.
	Table = "table"
	// TableWatermark is the table's watermark of a partition (Offset):
	// every offset below it must be in the table exactly once.
	TableWatermark = "table-watermark"
	// Fault is a fault the driver injected (Value names it); the checker
	// only counts them.
	Fault = "fault"
	// LogStart is a partition's log start (Offset; the raw log start on a
	// topic with retention.raw.ms) read straight from the metadata store at
	// Time, and the table's watermark read after it (From; absent without
	// a table). The retention invariants read them; the checker does not.
	LogStart = "log-start"
)

// The outcomes of a send.
const (
	OK      = "ok"
	Failed  = "failed"  // definitely not stored
	Unknown = "unknown" // may or may not have been stored
)

// Op is one line of a history.
type Op struct {
	Type string `json:"type"`
	// Time is when the driver recorded the op (unix nanoseconds); the
	// checker uses the line order, not Time. Start, of a send, is when
	// its request was handed to the client.
	Time  int64 `json:"time,omitempty"`
	Start int64 `json:"start,omitempty"`
	// Process is the client that did it (a producer's or reader's name;
	// a reader that seeks starts a new name).
	Process   string `json:"process,omitempty"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Key and Value of the record (values are unique in a run).
	Key     string `json:"key,omitempty"`
	Value   string `json:"value,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Group   string `json:"group,omitempty"`
	Member  string `json:"member,omitempty"`
	// Partitions of an Assign.
	Partitions []int32 `json:"partitions,omitempty"`
	// Final marks a read by the final reader.
	Final bool  `json:"final,omitempty"`
	From  int64 `json:"from,omitempty"`
	// How a member ended (MemberEnd), or a fault's detail.
	Detail string `json:"detail,omitempty"`
}

// Recorder collects a history; it is safe for concurrent use. Every op
// gets its place in the history when Add is called.
type Recorder struct {
	mu  sync.Mutex // guards ops
	ops []Op
	max int
}

// ErrFull is returned by Add past the recorder's bound.
var ErrFull = errors.New("history: the history is full")

// NewRecorder returns a recorder of at most max ops.
func NewRecorder(max int) *Recorder { return &Recorder{max: max} }

// Add appends op, stamping its Time.
func (r *Recorder) Add(op Op) error {
	op.Time = time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ops) >= r.max {
		return ErrFull
	}
	r.ops = append(r.ops, op)
	return nil
}

// Ops returns a copy of the history so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Encode writes ops as JSON lines.
func Encode(w io.Writer, ops []Op) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			return fmt.Errorf("history: write op %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// MaxLineBytes bounds one line of a history file.
const MaxLineBytes = 1 << 20

// Decode reads a history written by Encode. A line that is not an op is an
// error naming its number.
func Decode(r io.Reader) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	var ops []Op
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(line, &op); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", n, err)
		}
		if err := op.validate(); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", n, err)
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return ops, nil
}

func (op Op) validate() error {
	switch op.Type {
	case Send:
		switch op.Outcome {
		case OK, Failed, Unknown:
		default:
			return fmt.Errorf("send outcome %q is not ok, failed or unknown", op.Outcome)
		}
	case Read, Table, FinalRead, TableWatermark, Fault, LogStart:
	case Assign, Commit, MemberEnd, GroupEnd:
		if op.Group == "" {
			return fmt.Errorf("%s without a group", op.Type)
		}
	default:
		return fmt.Errorf("unknown op type %q", op.Type)
	}
	if op.Offset < 0 || op.From < 0 {
		return fmt.Errorf("negative offset %d (from %d)", op.Offset, op.From)
	}
	return nil
}
