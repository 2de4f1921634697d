package metadata

import "testing"

func TestRetentionRule(t *testing.T) {
	// Batches [0,4] [5,9] [10,14] [15,19], 100 bytes each, appended at
	// 1000, 2000, 3000, 4000; log start 2, high watermark 20.
	var bs []RetentionBatch
	for i := range int64(4) {
		bs = append(bs, RetentionBatch{BaseOffset: 5 * i, LastOffset: 5*i + 4, ByteLength: 100, AppendMs: 1000 * (i + 1)})
	}
	st := PartitionState{Partition: 3, LogStartOffset: 2, HighWatermark: 20}
	for _, tc := range []struct {
		name   string
		r      Retention
		cutoff int64
		want   int64
	}{
		{"unlimited", Retention{Ms: -1, Bytes: -1}, 0, 2},
		{"nothing expired", Retention{Ms: 1, Bytes: -1}, 1000, 2},
		{"two batches expired", Retention{Ms: 1, Bytes: -1}, 2500, 10},
		{"all expired", Retention{Ms: 1, Bytes: -1}, 9999, 20},
		{"size keeps two batches", Retention{Ms: -1, Bytes: 250}, 0, 10},
		{"size keeps exactly two", Retention{Ms: -1, Bytes: 200}, 0, 10},
		{"size zero empties", Retention{Ms: -1, Bytes: 0}, 0, 20},
		{"size under the limit", Retention{Ms: -1, Bytes: 400}, 0, 2},
		{"the furthest of time and size", Retention{Ms: 1, Bytes: 350}, 2500, 10},
		{"hold bounds", Retention{Ms: -1, Bytes: 0, Hold: map[int32]int64{3: 7}}, 0, 7},
		{"hold below the log start: no move", Retention{Ms: -1, Bytes: 0, Hold: map[int32]int64{3: 1}}, 0, 2},
		{"a hold without the partition holds all", Retention{Ms: -1, Bytes: 0, Hold: map[int32]int64{}}, 0, 2},
	} {
		if got := RetentionRule(st, bs, tc.r, tc.cutoff); got != tc.want {
			t.Errorf("%s: RetentionRule = %d, want %d", tc.name, got, tc.want)
		}
	}
	// The time scan reads RetentionScan batches a pass.
	many := make([]RetentionBatch, RetentionScan+5)
	for i := range many {
		many[i] = RetentionBatch{BaseOffset: int64(i), LastOffset: int64(i), ByteLength: 1, AppendMs: 1}
	}
	if got := RetentionRule(PartitionState{HighWatermark: int64(len(many))}, many, Retention{Ms: 1, Bytes: -1}, 100); got != RetentionScan {
		t.Errorf("a long expired log: %d, want %d (one scan's worth)", got, RetentionScan)
	}
	if !NeedsSizeCut(100, 1, 100) || NeedsSizeCut(100, 0, 100) || NeedsSizeCut(1<<40, 0, -1) {
		t.Error("NeedsSizeCut")
	}
}
