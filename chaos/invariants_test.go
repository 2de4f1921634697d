package chaos

import (
	"testing"

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
