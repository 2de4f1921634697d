package compactor

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

func TestRetentionDue(t *testing.T) {
	st := func(ls, hw int64) metadata.PartitionState {
		return metadata.PartitionState{Partition: 1, LogStartOffset: ls, HighWatermark: hw}
	}
	prev := partRetention{logStart: 10, hw: 20, hold: -1, dueMs: 5000, keptBytes: 300}
	timeOnly := metadata.Retention{Ms: 1000, Bytes: -1}
	both := metadata.Retention{Ms: 1000, Bytes: 4096}
	sizeOnly := metadata.Retention{Ms: -1, Bytes: 4096}
	held := metadata.Retention{Ms: 1000, Bytes: -1, Hold: map[int32]int64{1: 15}}
	for _, tc := range []struct {
		name string
		prev partRetention
		seen bool
		st   metadata.PartitionState
		r    metadata.Retention
		now  int64
		want bool
	}{
		{"empty partition", prev, false, st(20, 20), both, 0, false},
		{"never looked at", prev, false, st(10, 20), timeOnly, 0, true},
		{"idle, time not due", prev, true, st(10, 20), timeOnly, 4999, false},
		{"time due", prev, true, st(10, 20), timeOnly, 5000, true},
		{"time off: never due by time", prev, true, st(10, 20), sizeOnly, 9999, false},
		{"new batches, time only: not due", prev, true, st(10, 25), timeOnly, 0, false},
		{"new batches under a size limit: due", prev, true, st(10, 25), both, 0, true},
		{"idle under a size limit", prev, true, st(10, 20), sizeOnly, 0, false},
		{"log start moved (DeleteRecords)", prev, true, st(12, 20), timeOnly, 0, true},
		{"a hold appeared", prev, true, st(10, 20), held, 0, true},
		{"the same hold", partRetention{logStart: 10, hw: 20, hold: 15}, true, st(10, 20), held, 0, false},
		{"no due time: not before new batches", partRetention{logStart: 10, hw: 20, hold: -1}, true, st(10, 20), timeOnly, 1 << 40, false},
	} {
		if got := retentionDue(tc.prev, tc.seen, tc.st, tc.r, tc.now); got != tc.want {
			t.Errorf("%s: retentionDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRetentionKnownAndLearn(t *testing.T) {
	if k := retentionKnown(partRetention{hw: 20, keptBytes: 300}, true, 3); k != (metadata.RetentionKnown{Partition: 3, HighWatermark: 20, Bytes: 300}) {
		t.Errorf("known = %+v", k)
	}
	for _, prev := range []partRetention{{hw: 20, keptBytes: -1}} {
		if k := retentionKnown(prev, true, 3); k.HighWatermark != -1 {
			t.Errorf("uncounted: known = %+v, want nothing known", k)
		}
	}
	if k := retentionKnown(partRetention{hw: 20, keptBytes: 300}, false, 3); k.HighWatermark != -1 {
		t.Errorf("unseen: known = %+v, want nothing known", k)
	}
	ch := metadata.RetentionCheck{State: metadata.PartitionState{Partition: 2, LogStartOffset: 5, HighWatermark: 9}, YoungMs: 7000, KeptBytes: 42}
	r := metadata.Retention{Ms: 1000, Bytes: 100, Hold: map[int32]int64{2: 8}}
	if got := learnRetention(ch, r, 6000); got != (partRetention{logStart: 5, hw: 9, hold: 8, dueMs: 8000, keptBytes: 42}) {
		t.Errorf("learn = %+v", got)
	}
	ch.Cut = true
	if got := learnRetention(ch, r, 6000); got.dueMs != 6000 {
		t.Errorf("a cut scan: due %d, want at once (6000)", got.dueMs)
	}
	ch.Cut, ch.YoungMs = false, 0
	if got := learnRetention(ch, r, 6000); got.dueMs != 0 {
		t.Errorf("nothing kept by time: due %d, want none", got.dueMs)
	}
	if got := learnRetention(metadata.RetentionCheck{YoungMs: 7000}, metadata.Retention{Ms: -1}, 6000); got.dueMs != 0 || got.hold != -1 {
		t.Errorf("time off: %+v, want no due time and no hold", got)
	}
}

func TestCompactDue(t *testing.T) {
	st := func(ls, hw int64) metadata.PartitionState {
		return metadata.PartitionState{LogStartOffset: ls, HighWatermark: hw}
	}
	prev := keyedState{logStart: 0, hw: 20, due: 5000}
	for _, tc := range []struct {
		name string
		prev keyedState
		seen bool
		st   metadata.PartitionState
		now  int64
		want bool
	}{
		{"empty", prev, false, st(3, 3), 0, false},
		{"never read", prev, false, st(0, 20), 0, true},
		{"idle", prev, true, st(0, 20), 4999, false},
		{"a tombstone or a held-back batch is due", prev, true, st(0, 20), 5000, true},
		{"new batch: the cleaning point moves", prev, true, st(0, 21), 0, true},
		{"log start moved", prev, true, st(4, 20), 0, true},
		{"cut: read every pass", keyedState{hw: 20, cut: true}, true, st(0, 20), 0, true},
		{"rewritten: read again", keyedState{hw: 20, again: true}, true, st(0, 20), 0, true},
		{"nothing due", keyedState{hw: 20}, true, st(0, 20), 1 << 40, false},
	} {
		if got := compactDue(tc.prev, tc.seen, tc.st, tc.now); got != tc.want {
			t.Errorf("%s: compactDue = %v, want %v", tc.name, got, tc.want)
		}
	}
	if earliestDue(0, 5) != 5 || earliestDue(5, 0) != 5 || earliestDue(7, 5) != 5 || earliestDue(0, 0) != 0 {
		t.Error("earliestDue")
	}
	at := time.Unix(1000, 0)
	if renewDue(at, at.Add(29*time.Second), 2*time.Minute) || !renewDue(at, at.Add(30*time.Second), 2*time.Minute) || !renewDue(at, at.Add(-time.Second), 2*time.Minute) {
		t.Error("renewDue")
	}
}

func TestByteRuns(t *testing.T) {
	b := func(key string, off, n int64) metadata.CompactBatch {
		return metadata.CompactBatch{FileKey: key, ByteOffset: off, ByteLength: n, FileSize: 1000}
	}
	bs := []metadata.CompactBatch{b("f", 100, 50), b("g", 0, 10), b("f", 0, 50), b("f", 50, 50), b("f", 300, 10), b("g", 10, 5)}
	runs := byteRuns(bs)
	type run struct {
		key    string
		lo, hi int64
		rows   int
	}
	var got []run
	for _, r := range runs {
		got = append(got, run{r.key, r.lo, r.hi, len(r.rows)})
	}
	want := []run{{"f", 0, 150, 3}, {"f", 300, 310, 1}, {"g", 0, 15, 2}}
	if len(got) != len(want) {
		t.Fatalf("runs %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
