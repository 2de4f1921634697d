package metadata

import (
	"errors"
	"testing"
	"time"
)

func TestParseIceberg(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]string
		want Iceberg
		bad  bool
	}{
		{cfg: nil, want: Iceberg{Enabled: true, Lag: time.Minute}},
		{cfg: map[string]string{"iceberg.enabled": "false"}, want: Iceberg{Lag: time.Minute}},
		{cfg: map[string]string{"iceberg.enabled": "true", "iceberg.lag": "30s"}, want: Iceberg{Enabled: true, Lag: 30 * time.Second}},
		{cfg: map[string]string{"iceberg.lag": "0"}, want: Iceberg{Enabled: true}},
		{cfg: map[string]string{"iceberg.lag": "1500"}, want: Iceberg{Enabled: true, Lag: 1500 * time.Millisecond}},
		{cfg: map[string]string{"iceberg.enabled": "yes"}, bad: true},
		{cfg: map[string]string{"iceberg.enabled": ""}, bad: true},
		{cfg: map[string]string{"iceberg.lag": "-1s"}, bad: true},
		{cfg: map[string]string{"iceberg.lag": "-5"}, bad: true},
		{cfg: map[string]string{"iceberg.lag": "soon"}, bad: true},
	} {
		got, err := ParseIceberg(tc.cfg)
		if tc.bad {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseIceberg(%v) = %v, want ErrInvalidConfig", tc.cfg, err)
			}
			if ValidateTopicConfig(tc.cfg) == nil {
				t.Errorf("ValidateTopicConfig(%v) accepted it", tc.cfg)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseIceberg(%v) = %+v, %v, want %+v", tc.cfg, got, err, tc.want)
		}
	}
}

func TestHoldLogStart(t *testing.T) {
	hold := map[int32]int64{0: 10, 1: 0}
	for _, tc := range []struct {
		target int64
		p      int32
		hold   map[int32]int64
		want   int64
	}{
		{target: 50, p: 0, hold: nil, want: 50},  // no table: not held
		{target: 50, p: 0, hold: hold, want: 10}, // held at the watermark
		{target: 5, p: 0, hold: hold, want: 5},   // below it: unchanged
		{target: 50, p: 1, hold: hold, want: 0},  // watermark 0
		{target: 50, p: 2, hold: hold, want: 0},  // partition absent: 0
		{target: 50, p: 2, hold: map[int32]int64{}, want: 0},
	} {
		if got := HoldLogStart(tc.target, tc.p, tc.hold); got != tc.want {
			t.Errorf("HoldLogStart(%d, %d, %v) = %d, want %d", tc.target, tc.p, tc.hold, got, tc.want)
		}
	}
}

func TestIcebergCursor(t *testing.T) {
	for _, wm := range []map[int32]int64{{}, {0: 12}, {2: 7, 0: 1200, 1: 998}} {
		s := FormatIcebergCursor(42, wm)
		got, ok := ParseIcebergCursor(s, 42)
		if !ok || len(got) != len(wm) {
			t.Fatalf("%q: %v %v, want %v", s, got, ok, wm)
		}
		for p, o := range wm {
			if got[p] != o {
				t.Errorf("%q: partition %d at %d, want %d", s, p, got[p], o)
			}
		}
		if _, ok := ParseIcebergCursor(s, 43); ok {
			t.Errorf("%q read as topic 43's", s)
		}
	}
	if id, ok := IcebergCursorTopic(FormatIcebergCursor(42, nil)); !ok || id != 42 {
		t.Errorf("IcebergCursorTopic = %d, %v", id, ok)
	}
	if _, ok := IcebergCursorTopic(""); ok {
		t.Error("IcebergCursorTopic accepted an empty cursor")
	}
	if s := FormatIcebergCursor(1, map[int32]int64{1: 5, 0: 3}); s != "1 0:3,1:5" {
		t.Errorf("format: %q", s)
	}
	for _, bad := range []string{"", "x 0:1", "1", "1 0:", "1 :3", "1 0:3,", "1 -1:3", "1 0:-3", "1 0:3:4"} {
		if _, ok := ParseIcebergCursor(bad, 1); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A cursor may carry the table's last snapshot: the watermarks read the
// same with or without it, and old cursors hold none.
func TestIcebergCursorSnapshot(t *testing.T) {
	for _, wm := range []map[int32]int64{{}, {0: 12, 3: 4}} {
		base := FormatIcebergCursor(7, wm)
		if _, _, ok := ParseIcebergSnapshot(base); ok {
			t.Errorf("%q: a snapshot where none was written", base)
		}
		s := WithIcebergSnapshot(base, 4242, 1700000000123)
		id, ms, ok := ParseIcebergSnapshot(s)
		if !ok || id != 4242 || ms != 1700000000123 {
			t.Fatalf("%q: snapshot %d at %d (%v)", s, id, ms, ok)
		}
		got, ok := ParseIcebergCursor(s, 7)
		if !ok || len(got) != len(wm) {
			t.Fatalf("%q: watermarks %v %v, want %v", s, got, ok, wm)
		}
		for p, o := range wm {
			if got[p] != o {
				t.Errorf("%q: partition %d at %d, want %d", s, p, got[p], o)
			}
		}
	}
	for _, bad := range []string{"7 0:1 s=", "7 0:1 s=x@1", "7 0:1 s=1", "7 0:1 s=1@y"} {
		if _, _, ok := ParseIcebergSnapshot(bad); ok {
			t.Errorf("%q read as a snapshot", bad)
		}
	}
}
