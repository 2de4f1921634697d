package agent

import (
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/status"
)

func TestTimestampError(t *testing.T) {
	const now = int64(1_700_000_000_000)
	h := time.Hour
	cases := []struct {
		ts            int64
		before, after time.Duration
		limit         string // "" accepted
	}{
		{now, 0, 0, ""},
		{0, 0, 0, ""},
		{-1, 0, 0, "timestamp"},
		{math.MinInt64, 0, 0, "timestamp"},
		{MaxTimestampMs, 0, 0, ""},
		{MaxTimestampMs + 1, 0, 0, "max_timestamp_ms"},
		{math.MaxInt64, 0, 0, "max_timestamp_ms"},
		{math.MaxInt64, 0, h, "max_timestamp_ms"},
		{now + h.Milliseconds(), 0, h, ""},
		{now + h.Milliseconds() + 1, 0, h, "timestamp_after_max"},
		{now - h.Milliseconds(), h, 0, ""},
		{now - h.Milliseconds() - 1, h, 0, "timestamp_before_max"},
		{0, h, 0, "timestamp_before_max"},
		{now - 10*h.Milliseconds(), 0, h, ""}, // no before bound
	}
	for _, c := range cases {
		err := timestampError(func() string { return "record 0" }, c.ts, now, c.before, c.after)
		got := ""
		if err != nil {
			st, _ := status.FromError(err)
			for _, d := range st.Details() {
				if info, ok := d.(interface{ GetMetadata() map[string]string }); ok {
					got = info.GetMetadata()["limit"]
				}
			}
			if got == "" {
				t.Fatalf("ts %d: refusal %v names no limit", c.ts, err)
			}
		}
		if got != c.limit {
			t.Errorf("ts %d (before %v, after %v): limit %q, want %q (%v)", c.ts, c.before, c.after, got, c.limit, err)
		}
	}
}

// The latest timestamp accepted converts to the Iceberg table's
// microseconds (time.UnixMilli, then UnixMicro, as the compactor does)
// without overflow; MaxInt64 does not.
func TestMaxTimestampConvertsToMicroseconds(t *testing.T) {
	tm := time.UnixMilli(MaxTimestampMs).UTC()
	if us := tm.UnixMicro(); us != MaxTimestampMs*1000 || tm.Year() != 9999 {
		t.Fatalf("MaxTimestampMs: %d µs, year %d", us, tm.Year())
	}
	if us := time.UnixMilli(math.MaxInt64).UnixMicro(); us/1000 == math.MaxInt64 {
		t.Fatalf("test premise: MaxInt64 ms converts to %d µs", us)
	}
}
