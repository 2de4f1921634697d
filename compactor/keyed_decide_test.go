package compactor

import (
	"testing"
	"time"
)

func TestKeyedSurvivors(t *testing.T) {
	const now = 1_000_000
	rec := func(off int64, key string, tomb bool, at int64) keyedRecord {
		r := keyedRecord{Offset: off, Tombstone: tomb, AppendTime: at}
		if key != "-" {
			r.Key = []byte(key)
		}
		return r
	}
	for _, tc := range []struct {
		name      string
		recs      []keyedRecord
		retention time.Duration
		want      []int64 // surviving offsets
		due       int64
	}{
		{"latest per key", []keyedRecord{rec(0, "a", false, 0), rec(1, "b", false, 0), rec(3, "a", false, 0), rec(7, "b", false, 0)},
			time.Hour, []int64{3, 7}, 0},
		{"keyless kept", []keyedRecord{rec(0, "-", false, 0), rec(1, "-", true, 0), rec(2, "a", false, 0)},
			time.Hour, []int64{0, 1, 2}, 0},
		{"empty key is a key", []keyedRecord{rec(0, "", false, 0), rec(1, "", false, 0)},
			time.Hour, []int64{1}, 0},
		{"young tombstone kept", []keyedRecord{rec(0, "a", false, 0), rec(1, "a", true, now-10)},
			time.Second, []int64{1}, now - 10 + 1000},
		{"tombstone expires at delete.retention.ms", []keyedRecord{rec(0, "a", false, 0), rec(1, "a", true, now-1000)},
			time.Second, nil, 0},
		{"superseded tombstone removed at once", []keyedRecord{rec(0, "a", true, now), rec(1, "a", false, now)},
			time.Hour, []int64{1}, 0},
		{"value after expired tombstone", []keyedRecord{rec(0, "a", true, 0), rec(5, "a", false, 0), rec(6, "b", true, now)},
			time.Second, []int64{5, 6}, now + 1000},
		{"zero retention", []keyedRecord{rec(0, "a", true, now)}, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			latest := latestByKey(tc.recs)
			var got []int64
			for _, r := range tc.recs {
				if survives(r, latest, now, tc.retention) {
					got = append(got, r.Offset)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("survivors %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("survivors %v, want %v", got, tc.want)
				}
			}
			if due := tombstoneDue(tc.recs, latest, now, tc.retention); due != tc.due {
				t.Errorf("tombstone due %d, want %d", due, tc.due)
			}
		})
	}
}
