package metadata

import (
	"errors"
	"testing"
	"time"
)

func TestRetentionRuleRaw(t *testing.T) {
	// Batches [0,4] [5,9] [10,14] [15,19] appended at 1000..4000; the
	// clock at 5000. retention.ms 3500 expires the first batch,
	// retention.raw.ms 1500 the first three, where the table holds them.
	var bs []RetentionBatch
	for i := range int64(4) {
		bs = append(bs, RetentionBatch{BaseOffset: 5 * i, LastOffset: 5*i + 4, ByteLength: 100, AppendMs: 1000 * (i + 1)})
	}
	st := PartitionState{Partition: 3, LogStartOffset: 0, HighWatermark: 20}
	const now = 5000
	for _, tc := range []struct {
		name string
		r    Retention
		want int64
	}{
		{"no raw setting: retention.ms", Retention{Ms: 3500, Bytes: -1, Hold: map[int32]int64{3: 20}}, 5},
		{"raw ages out at retention.raw.ms", Retention{Ms: 3500, Bytes: -1, RawMs: 1500, HasRaw: true, Hold: map[int32]int64{3: 20}}, 15},
		{"raw waits for the table's watermark", Retention{Ms: 3500, Bytes: -1, RawMs: 1500, HasRaw: true, Hold: map[int32]int64{3: 12}}, 12},
		{"a table holding nothing holds all", Retention{Ms: 3500, Bytes: -1, RawMs: 0, HasRaw: true, Hold: map[int32]int64{}}, 0},
		{"no table: retention.raw.ms does not apply", Retention{Ms: 3500, Bytes: -1, RawMs: 1500, HasRaw: true}, 5},
		{"raw 0: everything the table holds", Retention{Ms: -1, Bytes: -1, RawMs: 0, HasRaw: true, Hold: map[int32]int64{3: 17}}, 17},
		{"size still cuts, within the hold", Retention{Ms: -1, Bytes: 150, RawMs: -1, HasRaw: true, Hold: map[int32]int64{3: 20}}, 15},
	} {
		cutoff := int64(now) - tc.r.Raw().Ms
		if got := RetentionRule(st, bs, tc.r, cutoff); got != tc.want {
			t.Errorf("%s: RetentionRule = %d, want %d", tc.name, got, tc.want)
		}
		if tc.r.Raw().Raw().Ms != tc.r.Raw().Ms {
			t.Errorf("%s: Raw is not idempotent", tc.name)
		}
	}
}

func TestParseRetentionRaw(t *testing.T) {
	for _, tc := range []struct {
		cfg     map[string]string
		raw     int64
		has     bool
		invalid bool
	}{
		{map[string]string{}, 0, false, false},
		{map[string]string{"retention.raw.ms": "1h"}, 3_600_000, true, false},
		{map[string]string{"retention.ms": "-1", "retention.raw.ms": "-1"}, -1, true, false},
		{map[string]string{"retention.ms": "-1", "retention.raw.ms": "10"}, 10, true, false},
		{map[string]string{"retention.ms": "1000", "retention.raw.ms": "1000"}, 1000, true, false},
		{map[string]string{"retention.ms": "1000", "retention.raw.ms": "1001"}, 0, false, true},
		{map[string]string{"retention.ms": "1000", "retention.raw.ms": "-1"}, 0, false, true},
		{map[string]string{"retention.raw.ms": "soon"}, 0, false, true},
	} {
		r, err := ParseRetention(tc.cfg)
		if tc.invalid {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v: err %v, want ErrInvalidConfig", tc.cfg, err)
			}
			if err := ValidateTopicConfig(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v: ValidateTopicConfig %v, want ErrInvalidConfig", tc.cfg, err)
			}
			continue
		}
		if err != nil || r.RawMs != tc.raw || r.HasRaw != tc.has {
			t.Errorf("%v: %+v, %v; want raw %d (%v)", tc.cfg, r, err, tc.raw, tc.has)
		}
		if err := ValidateTopicConfig(tc.cfg); err != nil {
			t.Errorf("%v: ValidateTopicConfig %v", tc.cfg, err)
		}
	}
}

func TestTableServesAndItsRetention(t *testing.T) {
	for _, tc := range []struct {
		cfg    map[string]string
		serves bool
		ret    time.Duration
	}{
		{map[string]string{}, false, -1},
		{map[string]string{"retention.ms": "1h"}, false, -1},
		{map[string]string{"retention.ms": "1h", "retention.raw.ms": "1m"}, true, time.Hour},
		{map[string]string{"retention.raw.ms": "1m"}, true, time.Duration(DefaultRetentionMs) * time.Millisecond},
		{map[string]string{"retention.ms": "-1", "retention.raw.ms": "1m"}, true, -1},
		{map[string]string{"retention.ms": "1h", "retention.raw.ms": "1m", "iceberg.retention.ms": "2h"}, true, 2 * time.Hour},
		{map[string]string{"retention.raw.ms": "1m", "iceberg.enabled": "false"}, false, time.Duration(DefaultRetentionMs) * time.Millisecond},
	} {
		if got := TableServes(tc.cfg); got != tc.serves {
			t.Errorf("%v: TableServes = %v", tc.cfg, got)
		}
		ic, err := ParseIceberg(tc.cfg)
		if err != nil || ic.Retention != tc.ret {
			t.Errorf("%v: table retention %v, %v; want %v", tc.cfg, ic.Retention, err, tc.ret)
		}
	}
}

func TestServedLogStart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		raw, first  int64
		inTable     bool
		floor, want int64
	}{
		{"raw only", 100, 0, false, 0, 100},
		{"the table's first", 100, 20, true, 0, 20},
		{"a floor in the table", 100, 20, true, 50, 50},
		{"a floor below the table's first", 100, 20, true, 10, 20},
		{"a floor at the raw start", 100, 20, true, 100, 100},
		{"a floor past the raw start: the raw log answers", 100, 20, true, 150, 100},
		{"a table first at the raw start holds nothing below", 100, 100, true, 0, 100},
		{"floor without a table", 100, 0, false, 50, 100},
	} {
		if got := ServedLogStart(tc.raw, tc.first, tc.inTable, tc.floor); got != tc.want {
			t.Errorf("%s: ServedLogStart(%d, %d, %v, %d) = %d, want %d", tc.name, tc.raw, tc.first, tc.inTable, tc.floor, got, tc.want)
		}
	}
}

func TestTableFloorsRoundTrip(t *testing.T) {
	in := map[int32]int64{3: 70, 0: 5, 12: 0}
	s := FormatTableFloors(in)
	if s != "0=5 3=70 12=0" {
		t.Fatalf("FormatTableFloors = %q", s)
	}
	got := ParseTableFloors(s)
	if len(got) != len(in) {
		t.Fatalf("ParseTableFloors(%q) = %v", s, got)
	}
	for p, f := range in {
		if got[p] != f {
			t.Fatalf("ParseTableFloors(%q) = %v, want %v", s, got, in)
		}
	}
	for _, bad := range []string{"x", "1=", "=2", "-1=3", "1=-3", "1=2=3", "99999999999=1"} {
		if got := ParseTableFloors(bad); len(got) != 0 {
			t.Errorf("ParseTableFloors(%q) = %v, want none", bad, got)
		}
	}
	if got := ParseTableFloors("1=9 1=4"); got[1] != 9 {
		t.Errorf("a partition twice: %v, want the higher floor", got)
	}
}
