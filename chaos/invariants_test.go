package chaos

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/chaos/history"
)

func TestRetentionPastHold(t *testing.T) {
	final := func(p int32, from, hw int64) history.Op {
		return history.Op{Type: history.FinalRead, Partition: p, From: from, Offset: hw}
	}
	wm := func(p int32, o int64) history.Op {
		return history.Op{Type: history.TableWatermark, Partition: p, Offset: o}
	}
	sample := func(p int32, start, hold int64) history.Op {
		return history.Op{Type: history.LogStart, Partition: p, Offset: start, From: hold}
	}
	for _, tc := range []struct {
		name       string
		ops        []history.Op
		table, raw bool
		want       int
	}{
		{"log start at the watermark", []history.Op{final(0, 5, 9), wm(0, 5)}, true, false, 0},
		{"log start below it", []history.Op{final(0, 3, 9), wm(0, 5)}, true, false, 0},
		{"log start past it", []history.Op{final(0, 6, 9), wm(0, 5)}, true, false, 1},
		{"no watermark: the table holds nothing", []history.Op{final(0, 1, 9), final(1, 0, 9)}, true, false, 1},
		{"per partition", []history.Op{final(0, 6, 9), final(1, 6, 9), wm(0, 9), wm(1, 2)}, true, false, 1},
		{"no table: no hold", []history.Op{final(0, 6, 9)}, false, false, 0},
		{"samples within the hold", []history.Op{sample(0, 3, 3), sample(0, 5, 8), final(0, 5, 9), wm(0, 9)}, true, false, 0},
		{"a sample past the hold, caught up by the end", []history.Op{sample(0, 3, 3), sample(0, 6, 5), final(0, 6, 9), wm(0, 9)}, true, false, 1},
		{"a sample past it on two partitions", []history.Op{sample(0, 6, 5), sample(1, 2, 1), sample(1, 2, 2)}, true, false, 2},
		{"raw: the final read starts at the table's first offset", []history.Op{sample(0, 4, 5), final(0, 0, 9)}, true, true, 0},
		{"raw: the raw log start past the hold", []history.Op{sample(0, 6, 5), final(0, 0, 9), wm(0, 9)}, true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retentionPastHold(tc.ops, tc.table, tc.raw); got != tc.want {
				t.Fatalf("retentionPastHold = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRetentionWithin: with a retention of 5 s, a record below a log start
// seen at time T must have been sent before T-5s.
func TestRetentionWithin(t *testing.T) {
	const r = 5 * time.Second
	sec := int64(time.Second)
	send := func(o int64, start int64) history.Op {
		return history.Op{Type: history.Send, Outcome: history.OK, Partition: 0, Offset: o, Start: start}
	}
	sample := func(start, at int64) history.Op {
		return history.Op{Type: history.LogStart, Partition: 0, Offset: start, Time: at}
	}
	final := func(from, at int64) history.Op {
		return history.Op{Type: history.FinalRead, Partition: 0, From: from, Offset: 9, Time: at}
	}
	sends := []history.Op{send(0, 1*sec), send(1, 2*sec), send(2, 3*sec), send(3, 8*sec),
		{Type: history.Send, Outcome: history.Unknown, Partition: 0, Start: 9 * sec}}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		raw  bool
		want int
	}{
		{"deleted once old", []history.Op{sample(2, 8*sec), sample(3, 9*sec)}, false, 0},
		{"deleted 4 s after its send", []history.Op{sample(3, 7*sec)}, false, 1},
		{"the head deleted at once", []history.Op{sample(2, 8*sec), sample(4, 8*sec+1)}, false, 1},
		{"two young ones", []history.Op{sample(4, 7*sec)}, false, 2},
		{"the final read's log start", []history.Op{final(4, 12*sec)}, false, 1},
		{"raw: the final read's start is the table's", []history.Op{final(4, 12*sec)}, true, 0},
		{"nothing deleted", []history.Op{sample(0, 20*sec)}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retentionWithin(append(append([]history.Op(nil), sends...), tc.ops...), r, tc.raw); got != tc.want {
				t.Fatalf("retentionWithin = %d, want %d", got, tc.want)
			}
		})
	}
}
