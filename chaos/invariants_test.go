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
	for _, tc := range []struct {
		name  string
		ops   []history.Op
		table bool
		want  int
	}{
		{"log start at the watermark", []history.Op{final(0, 5, 9), wm(0, 5)}, true, 0},
		{"log start below it", []history.Op{final(0, 3, 9), wm(0, 5)}, true, 0},
		{"log start past it", []history.Op{final(0, 6, 9), wm(0, 5)}, true, 1},
		{"no watermark: the table holds nothing", []history.Op{final(0, 1, 9), final(1, 0, 9)}, true, 1},
		{"per partition", []history.Op{final(0, 6, 9), final(1, 6, 9), wm(0, 9), wm(1, 2)}, true, 1},
		{"no table: no hold", []history.Op{final(0, 6, 9)}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retentionPastHold(tc.ops, tc.table); got != tc.want {
				t.Fatalf("retentionPastHold = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSplitAsyncLoss(t *testing.T) {
	kill := int64(10 * time.Second)
	send := func(v string, o, at int64) history.Op {
		return history.Op{Type: history.Send, Outcome: history.OK, Value: v, Offset: o, Time: at}
	}
	read := func(v string, o int64, final bool) history.Op {
		op := history.Op{Type: history.Read, Process: "r", Value: v, Offset: o, Final: final}
		if final {
			op.Process = "final"
		}
		return op
	}
	ops := []history.Op{
		send("a", 0, kill-int64(3*time.Second)), read("a", 0, false), // streamed: kept
		send("b", 1, kill-int64(2*time.Second)), read("b", 1, false), // acked, read, then lost with the primary
		send("c", 2, kill-int64(time.Second)), // acked, never read, lost
		{Type: history.Send, Outcome: history.Unknown, Value: "u", Time: kill - 1},
		{Type: history.Fault, Value: PGFailover, Time: kill},
		send("d", 1, kill+1), // acked after the kill and never read: still the checker's
		read("a", 0, true), {Type: history.FinalRead, From: 0, Offset: 2},
	}
	loss, kept := splitAsyncLoss(ops)
	if loss.Lost != 2 || loss.Window != 2*time.Second {
		t.Fatalf("loss %+v, want 2 sends over 2s", loss)
	}
	for _, op := range kept {
		if op.Value == "b" || op.Value == "c" {
			t.Fatalf("kept %+v of a lost send", op)
		}
	}
	if len(kept) != len(ops)-3 {
		t.Fatalf("kept %d ops of %d, want all but the 3 of b and c", len(kept), len(ops))
	}
	if r := history.Check(kept); r.Anomalies[history.Unseen] != 1 || r.Anomalies[history.InconsistentOffset] != 0 {
		t.Fatalf("anomalies %v: the send acknowledged after the kill must still be flagged", r.Anomalies)
	}
	if loss, kept := splitAsyncLoss(ops[:3]); loss != (AsyncLoss{}) || len(kept) != 3 {
		t.Fatalf("without a failover: %+v, %d ops", loss, len(kept))
	}
}
