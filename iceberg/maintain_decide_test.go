package iceberg

import (
	"testing"
	"time"
)

// TestSnapshotMaxAge: snapshots superseded within the protection window
// are kept (the age covers the oldest of them), the others follow maxAge.
func TestSnapshotMaxAge(t *testing.T) {
	now := time.UnixMilli(1_000_000_000_000)
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	cases := []struct {
		name            string
		commits         []int64
		maxAge, protect time.Duration
		want            time.Duration
	}{
		{"no protection", []int64{ago(48 * time.Hour), ago(time.Hour)}, 0, 0, 0},
		{"one snapshot", []int64{ago(48 * time.Hour)}, 0, 24 * time.Hour, 0},
		{"superseded an hour ago", []int64{ago(48 * time.Hour), ago(time.Hour)}, 0, 24 * time.Hour, 48*time.Hour + time.Second},
		{"superseded long ago", []int64{ago(72 * time.Hour), ago(48 * time.Hour)}, 0, 24 * time.Hour, 0},
		{"the oldest superseded within", []int64{ago(90 * time.Hour), ago(80 * time.Hour), ago(30 * time.Hour), ago(2 * time.Hour), ago(time.Hour)},
			0, 24 * time.Hour, 30*time.Hour + time.Second},
		{"any order", []int64{ago(time.Hour), ago(90 * time.Hour), ago(2 * time.Hour), ago(30 * time.Hour)},
			0, 24 * time.Hour, 30*time.Hour + time.Second},
		{"maxAge larger", []int64{ago(48 * time.Hour), ago(time.Hour)}, 100 * time.Hour, 24 * time.Hour, 100 * time.Hour},
		{"just outside the window", []int64{ago(48 * time.Hour), ago(24 * time.Hour)}, time.Hour, 24 * time.Hour, time.Hour},
	}
	for _, tc := range cases {
		if got := snapshotMaxAge(tc.commits, now, tc.maxAge, tc.protect); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
