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
		{cfg: nil, want: Iceberg{Enabled: true, Lag: time.Minute, Retention: -1}},
		{cfg: map[string]string{"iceberg.enabled": "false"}, want: Iceberg{Lag: time.Minute, Retention: -1}},
		{cfg: map[string]string{"iceberg.enabled": "true", "iceberg.lag": "30s"}, want: Iceberg{Enabled: true, Lag: 30 * time.Second, Retention: -1}},
		{cfg: map[string]string{"iceberg.lag": "0"}, want: Iceberg{Enabled: true, Retention: -1}},
		{cfg: map[string]string{"iceberg.lag": "1500"}, want: Iceberg{Enabled: true, Lag: 1500 * time.Millisecond, Retention: -1}},
		{cfg: map[string]string{"iceberg.retention.ms": "-1"}, want: Iceberg{Enabled: true, Lag: time.Minute, Retention: -1}},
		{cfg: map[string]string{"iceberg.retention.ms": "720h"}, want: Iceberg{Enabled: true, Lag: time.Minute, Retention: 720 * time.Hour}},
		{cfg: map[string]string{"iceberg.retention.ms": "86400000"}, want: Iceberg{Enabled: true, Lag: time.Minute, Retention: 24 * time.Hour}},
		{cfg: map[string]string{"iceberg.retention.ms": "0"}, want: Iceberg{Enabled: true, Lag: time.Minute}},
		{cfg: map[string]string{"iceberg.retention.ms": "-2"}, bad: true},
		{cfg: map[string]string{"iceberg.retention.ms": "-1h"}, bad: true},
		{cfg: map[string]string{"iceberg.retention.ms": "forever"}, bad: true},
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

// The cursor's text form is pinned: older cursors (a watermark alone, or
// with a snapshot) still read, new fields read back, and the older
// readers still find the watermark and the snapshot in a new cursor.
func TestIcebergCursorFormat(t *testing.T) {
	full := IcebergCursor{TopicID: 42, Watermark: map[int32]int64{0: 1200, 1: 998}, HasTotals: true, Rows: 2198, DataFiles: 3,
		DataBytes: 81920, MaintainedMs: 1700000100000, Table: "floe.orders", SnapshotID: 4242, SnapshotMs: 1700000000123}
	for _, tc := range []struct {
		text string
		c    IcebergCursor
	}{
		{"42 0:1200,1:998", IcebergCursor{TopicID: 42, Watermark: map[int32]int64{0: 1200, 1: 998}}},
		{"42 ", IcebergCursor{TopicID: 42, Watermark: map[int32]int64{}}},
		{"42 0:5 s=7@1700000000000", IcebergCursor{TopicID: 42, Watermark: map[int32]int64{0: 5}, SnapshotID: 7, SnapshotMs: 1700000000000}},
		{"42 0:1200,1:998 t=2198/3/81920 m=1700000100000 n=floe.orders s=4242@1700000000123", full},
		{"42  t=0/0/0", IcebergCursor{TopicID: 42, Watermark: map[int32]int64{}, HasTotals: true}},
		{"42 3:1 m=5", IcebergCursor{TopicID: 42, Watermark: map[int32]int64{3: 1}, MaintainedMs: 5}},
		// The rejected table's figures, after n= and before s=.
		{"42 0:1200,1:998 t=2198/3/81920 m=1700000100000 n=floe.orders r=2/1/1500 s=4242@1700000000123", withRejected(full, 2, 1, 1500)},
		{"42 0:7 r=0/0/0", IcebergCursor{TopicID: 42, Watermark: map[int32]int64{0: 7}, HasRejected: true}},
	} {
		got, ok := ReadIcebergCursor(tc.text)
		if !ok || !sameCursor(got, tc.c) {
			t.Errorf("ReadIcebergCursor(%q) = %+v, %v, want %+v", tc.text, got, ok, tc.c)
		}
		if s := tc.c.String(); s != tc.text {
			t.Errorf("String() = %q, want %q", s, tc.text)
		}
		// The older readers.
		if wm, ok := ParseIcebergCursor(tc.text, 42); !ok || len(wm) != len(tc.c.Watermark) {
			t.Errorf("ParseIcebergCursor(%q) = %v, %v", tc.text, wm, ok)
		}
		if id, ms, ok := ParseIcebergSnapshot(tc.text); ok != (tc.c.SnapshotID != 0) || id != tc.c.SnapshotID || ms != tc.c.SnapshotMs {
			t.Errorf("ParseIcebergSnapshot(%q) = %d, %d, %v", tc.text, id, ms, ok)
		}
	}
	// Unknown and malformed optional fields are skipped; a bad head is not.
	got, ok := ReadIcebergCursor("42 0:1 x=9 t=1/2 m=z r=1/-2/3 s=3@4")
	if !ok || got.HasTotals || got.HasRejected || got.MaintainedMs != 0 || got.SnapshotID != 3 {
		t.Errorf("lenient read: %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "x 0:1", "42", "42 0:-1 t=1/2/3"} {
		if _, ok := ReadIcebergCursor(bad); ok {
			t.Errorf("ReadIcebergCursor(%q) accepted", bad)
		}
	}
}

// withRejected returns c with the rejected table's figures.
func withRejected(c IcebergCursor, rows, files, bytes int64) IcebergCursor {
	c.HasRejected, c.RejectedRows, c.RejectedDataFiles, c.RejectedDataBytes = true, rows, files, bytes
	return c
}

func sameCursor(a, b IcebergCursor) bool {
	if len(a.Watermark) != len(b.Watermark) {
		return false
	}
	for p, o := range a.Watermark {
		if b.Watermark[p] != o {
			return false
		}
	}
	return a.TopicID == b.TopicID && a.HasTotals == b.HasTotals && a.Rows == b.Rows && a.DataFiles == b.DataFiles &&
		a.DataBytes == b.DataBytes && a.Table == b.Table && a.MaintainedMs == b.MaintainedMs && a.SnapshotID == b.SnapshotID && a.SnapshotMs == b.SnapshotMs &&
		a.HasRejected == b.HasRejected && a.RejectedRows == b.RejectedRows && a.RejectedDataFiles == b.RejectedDataFiles &&
		a.RejectedDataBytes == b.RejectedDataBytes
}

func TestIcebergLag(t *testing.T) {
	b := func(base, last, bytes, at int64) BatchRef {
		return BatchRef{BaseOffset: base, LastOffset: last, ByteLength: bytes, LogAppendTime: at}
	}
	for _, tc := range []struct {
		name                string
		logStart, hw, wm    int64
		refs                []BatchRef
		records, bytes, age int64
	}{
		{"caught up", 0, 10, 10, nil, 0, 0, 0},
		{"all of two batches", 0, 10, 0, []BatchRef{b(0, 4, 100, 900), b(5, 9, 50, 950)}, 10, 150, 100},
		{"inside the first batch: its bytes count whole, its append time", 0, 10, 3, []BatchRef{b(0, 4, 100, 900), b(5, 9, 50, 950)}, 7, 150, 100},
		{"log start past the watermark", 6, 10, 2, []BatchRef{b(5, 9, 50, 950)}, 4, 50, 50},
		{"capped: the rest extrapolated", 0, 20, 0, []BatchRef{b(0, 4, 100, 900)}, 20, 400, 100},
		{"no batches known", 0, 10, 0, nil, 10, 0, 0},
		{"clock behind: age 0", 0, 5, 0, []BatchRef{b(0, 4, 10, 2000)}, 5, 10, 0},
	} {
		r, by, age := IcebergLag(tc.logStart, tc.hw, tc.wm, tc.refs, 1000)
		if r != tc.records || by != tc.bytes || age != tc.age {
			t.Errorf("%s: IcebergLag = %d records, %d bytes, %d ms; want %d, %d, %d", tc.name, r, by, age, tc.records, tc.bytes, tc.age)
		}
	}
}

// FuzzReadIcebergCursor: any stored text reads without a panic, and what
// reads formats back to a cursor that reads the same.
func FuzzReadIcebergCursor(f *testing.F) {
	for _, s := range []string{"", "42 ", "42 0:1200,1:998", "42 0:5 s=7@1700000000000",
		"42 0:1200,1:998 t=2198/3/81920 m=1700000100000 n=floe.orders s=4242@1700000000123",
		"42  t=0/0/0", "42 0:1 x=9 t=1/2 m=z s=3@4", "x 0:1", "1 0:3:4", "1 0:1 n= s=", "-1 0:1 t=-1/-2/-3 m=-4",
		"42 0:1200,1:998 t=2198/3/81920 m=1700000100000 n=floe.orders r=2/1/1500 s=4242@1700000000123", "42 0:1 r=1/2", "42 0:1 r=x/y/z r=1/1/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ReadIcebergCursor(s)
		if !ok {
			return
		}
		again, ok := ReadIcebergCursor(c.String())
		if !ok || !sameCursor(c, again) {
			t.Fatalf("%q read as %+v, formatted %q, read back as %+v (%v)", s, c, c.String(), again, ok)
		}
	})
}
